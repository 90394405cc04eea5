"""Celery tasks: thin, carrying ids only; the work is in runner/ (a run's batches: runner.loop,
runner.leases; a training job: runner.training.job), catalog (the stranded-upload sweep) and the
services of extraction and training (the reaper's wake-ups).

Tasks named workers.tasks.gpu_* are routed to the `gpu` queue (settings.CELERY_TASK_ROUTES). This
module imports no torch: the engine is loaded lazily by the first task a worker process runs.

No app below imports this module (it imports them: no loop between apps, issue #32). They ask for a
wake-up through a signal this module answers with its task: extraction.services.run_wakeup for a
run, training.services.job_wakeup for a training job. The runner's loop, which wakes other workers
for its run, is handed this module's wake_run: the loop between a wake-up and the task it starts is
closed here, in one place, explicitly.
"""

import logging
import os

from celery import shared_task
from celery.signals import worker_ready
from celery.utils.nodenames import worker_direct
from django.db import InterfaceError, OperationalError
from django.dispatch import receiver

from extraction.services import kick_run, run_wakeup
from training.services import job_wakeup

log = logging.getLogger(__name__)

GPU_QUEUE = "gpu"
TRAIN_QUEUE = "train"
CONTINUE_RETRY_POLICY = {"max_retries": 30, "interval_start": 0.5, "interval_step": 0.5, "interval_max": 2}


@shared_task(
    bind=True,
    name="workers.tasks.gpu_process_run",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    max_retries=5,
)
def gpu_process_run(self, run_id: int | None = None) -> None:
    """Work on run `run_id` until no work is left, then on any other run whose work waits.

    run_id None: only look for waiting work (sent when a worker starts, so a run whose wake-up
    messages were lost still finishes).
    """
    from runner.loop import process_runs

    owner = f"{self.request.hostname or 'worker'}/pid{os.getpid()}"
    unfinished = process_runs(run_id, owner, wake=wake_run)
    if unfinished is not None:
        # Its time slice is over: queue the next one (broker hiccups are retried for a minute).
        gpu_process_run.apply_async((unfinished,), retry=True, retry_policy=CONTINUE_RETRY_POLICY)


def send_gpu_wakeup(run_id: int) -> None:
    """One wake-up message of a run: the GPU task, for whichever GPU worker takes it."""
    gpu_process_run.apply_async((run_id,), retry=False)


def wake_run(run_id: int, total: int | None = None) -> bool:
    """The runner loop's wake-up (passed to it above): kick_run sending this module's task."""
    return kick_run(run_id, total, send=send_gpu_wakeup)


@receiver(run_wakeup, dispatch_uid="workers.tasks.answer_run_wakeup")
def answer_run_wakeup(sender, run_id: int, **kwargs) -> None:
    """The web side's and the reaper's wake-up of a run (extraction.services.kick_run)."""
    send_gpu_wakeup(run_id)


def consumes_gpu_queue(consumer) -> bool:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(queue.name == GPU_QUEUE for queue in queues)


@worker_ready.connect
def look_for_waiting_work(sender=None, **kwargs) -> None:
    """A GPU worker that (re)starts asks for waiting work: messages lost with Redis do not strand a run."""
    if not consumes_gpu_queue(sender):
        return
    log.info("looking for runs whose work waits")
    try:
        # To this worker's own queue (CELERY_WORKER_DIRECT): another GPU worker taking the message
        # might be one that cannot load the waiting run's model, and this one would never look.
        gpu_process_run.apply_async((None,), retry=False, queue=worker_direct(sender.hostname))
    except Exception as exc:  # noqa: BLE001 - a broker hiccup at start-up must not stop the worker
        log.warning("could not queue the look for waiting work: %s", exc)


# The reaper: periodic tasks that celery beat sends (schedule in workers/celery.py) to the light
# queue. Each does one thing and returns what it did, so it can be called alone (tests, a shell).


@shared_task(name="workers.tasks.release_expired_leases")
def release_expired_leases() -> int:
    """Leases whose worker died go back to their run's queue; returns how many."""
    from runner import leases

    released = leases.release_expired_leases()
    if released:
        log.info("released %d expired leases", released)
    return released


@shared_task(name="workers.tasks.wake_waiting_runs")
def wake_waiting_runs() -> list[int]:
    """Re-sends the wake-up of runs whose work waits with no live lease over it; returns their ids."""
    from extraction.services import kick_stalled_runs

    return kick_stalled_runs()


@shared_task(name="workers.tasks.remove_stranded_uploads")
def remove_stranded_uploads() -> list[int]:
    """Removes uploads left at mapping too long, with their files; returns the removed import ids."""
    from catalog.stranded_uploads import remove_stranded_uploads as remove

    return [removed.job_id for removed in remove()]


# Training (the `train` queue, settings.CELERY_TASK_ROUTES): one job per message; its state, progress
# and checkpoints are in PostgreSQL (runner/training/job.py), so a killed worker's job resumes elsewhere.


@shared_task(name="workers.tasks.train_model")
def train_model(job_id: int) -> None:
    """Run training job `job_id` to its end; returns quietly when another worker holds it or it is over."""
    from runner.training.job import run_job

    run_job(job_id, f"{train_model.request.hostname or 'worker'}/pid{os.getpid()}")


@receiver(job_wakeup, dispatch_uid="workers.tasks.answer_job_wakeup")
def answer_job_wakeup(sender, job_id: int, **kwargs) -> None:
    """A training job's wake-up (training.services.send_job): this module's task, on the train queue."""
    train_model.apply_async((job_id,), retry=False)


@shared_task(name="workers.tasks.resume_stalled_training")
def resume_stalled_training() -> list[int]:
    """Training jobs whose worker stopped beating go back to the queue (or fail); returns their ids."""
    from training.services import resume_stalled_jobs

    return resume_stalled_jobs()


def consumes_train_queue(consumer) -> bool:
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None) or []
    return any(queue.name == TRAIN_QUEUE for queue in queues)


@worker_ready.connect
def look_for_stalled_training(sender=None, **kwargs) -> None:
    """A train worker that (re)starts looks for jobs a dead worker left, so they resume without
    waiting for beat's next round."""
    if not consumes_train_queue(sender):
        return
    try:
        resume_stalled_training.apply_async((), retry=False, queue=worker_direct(sender.hostname))
    except Exception as exc:  # noqa: BLE001 - a broker hiccup at start-up must not stop the worker
        log.warning("could not queue the look for stalled training jobs: %s", exc)
