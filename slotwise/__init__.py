"""The project package: settings, the root URL map, the WSGI entry, and helpers every app shares
(names, params, error_pages, body_guard). The Celery app is loaded by the workers app when Django is
ready (workers/apps.py), not here: every app imports this package."""
