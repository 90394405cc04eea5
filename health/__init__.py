"""The status page for the people who run the system: PostgreSQL, Redis and the Celery workers per
queue (checks.py). An app of its own above workers/ (it asks the Celery app which workers answer),
so that workers/ holds only the Celery app, its queues and schedule, and thin tasks (issue #32)."""
