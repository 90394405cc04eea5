from django.apps import AppConfig


class WorkersConfig(AppConfig):
    name = "workers"

    def ready(self) -> None:
        """Load the Celery app (every app's shared tasks bind to it, in the web process too) and the
        tasks module, whose receivers answer the apps' wake-up signals (extraction.services.run_wakeup,
        training.services.job_wakeup). Here rather than in slotwise/__init__.py: the project package
        is imported by every app (slotwise.names, slotwise.params), so importing workers from it would
        tie every app to workers, a loop between apps (issue #32)."""
        from workers import celery, tasks  # noqa: F401
