"""A run's model that a worker could not load: recorded on the run, which fails after too many.

A worker loads the model before it leases anything, so a failed load leaves the run's items queued;
the failure is shown on the run page, and the run fails only once no worker could load its model
settings.EXTRACTION_MAX_LOAD_FAILURES times, all workers together.
"""

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from extraction.models import ModelLoadFailure, Run, WorkItem


def do_record_load_failure(run_id: int, worker: str, model_dir: str, error: str) -> bool:
    """Note on the run that `worker` could not load its model; True: the run waits for another worker.

    The run fails once settings.EXTRACTION_MAX_LOAD_FAILURES loads of its model failed, all workers
    together (each worker process retries a model at most once per
    settings.EXTRACTION_LOAD_RETRY_SECONDS), unless some worker has loaded it for this run
    (run.model_name is set then) and is working on it: a run never waits silently, and a model that
    no worker can load stops it within a few reaper rounds.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or not run.is_active:
            return False
        failure = ModelLoadFailure.objects.create(
            run=run, worker=worker, model_dir=model_dir, error=error[:4000]
        )
        workers = list(run.load_failures.values_list("worker", flat=True))
        if len(workers) < settings.EXTRACTION_MAX_LOAD_FAILURES or run.model_name:
            return True
        _fail_locked(
            run,
            f"model {failure.model_label} could not be loaded ({len(workers)} failed loads, by "
            f"{', '.join(sorted(set(workers)))}): {error}",
        )
    return False


def _fail_locked(run: Run, error: str) -> None:
    """Stop a run (its row locked by the caller): queued work is cancelled, the error kept."""
    WorkItem.objects.filter(run=run, status=WorkItem.Status.QUEUED).update(
        status=WorkItem.Status.CANCELLED, finished_at=timezone.now()
    )
    run.status = Run.Status.FAILED
    run.error = error
    run.finished_at = timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
