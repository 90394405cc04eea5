"""Starting, cancelling, waiting for and resuming training jobs: the side that only enqueues.

A job's state is its TrainingJob row; the Celery message on the `train` queue only says that a job
waits. `start_training_job` is a plain function a view or a management command calls, and
`wait_for_job` lets a command follow it to its end. The reaper (`resume_stalled_jobs`, run by
beat on the light queue) puts a job whose worker stopped beating back in the queue, to resume from
its last checkpoint, or fails it once its workers died TRAINING_MAX_ATTEMPTS times.
"""

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from catalog.models import Catalog
from registry.versions import default_version
from training import gold
from training.models import TrainingJob

log = logging.getLogger(__name__)

# A training job's wake-up: sent with job_id (sender TrainingJob), answered by workers.tasks with its
# train task. workers/ sits above this app (its task runs runner.training), so this app names no task,
# not even by a string (issue #32: no loop between apps).
job_wakeup = Signal()


class JobRefused(ValueError):
    """The job cannot start as asked; the message says what to change. Nothing was stored."""


@dataclass(frozen=True)
class JobRequest:
    catalog: Catalog
    minutes: float | None = None  # None: settings.TRAINING_MINUTES
    holdout_share: float | None = None  # None: settings.TRAINING_HOLDOUT_SHARE
    seed: int = 0
    max_steps: int | None = None  # None: settings.TRAINING_MAX_STEPS
    batch_tokens: int | None = None  # None: settings.TRAINING_BATCH_TOKENS


def add_event(job: TrainingJob, text: str) -> None:
    """Append a line to the job's "what happened" (saved with the caller's save)."""
    job.events = [*job.events, {"at": timezone.now().isoformat(timespec="seconds"), "text": text}]


def start_training_job(request: JobRequest, user=None) -> TrainingJob:
    """Draw the held-back products, store the queued job and send its message (after commit)."""
    minutes = request.minutes if request.minutes is not None else settings.TRAINING_MINUTES
    share = request.holdout_share if request.holdout_share is not None else settings.TRAINING_HOLDOUT_SHARE
    if not 0 < minutes <= settings.TRAINING_MAX_MINUTES:
        raise JobRefused(f"Minutes must be above 0 and at most {settings.TRAINING_MAX_MINUTES:g}.")
    if not 0 < share < 1:
        raise JobRefused("The held-back share must be between 0 and 1 (say 0.2).")
    with transaction.atomic():
        Catalog.objects.select_for_update().get(pk=request.catalog.pk)  # one start at a time per catalog
        running = TrainingJob.objects.filter(catalog=request.catalog, status__in=TrainingJob.ACTIVE_STATUSES)
        if running.exists():
            raise JobRefused(
                f"{request.catalog} already has a training job under way: wait for it or cancel it."
            )
        held, trained = gold.hold_back(request.catalog, share, request.seed)
        if not held or not trained:
            raise JobRefused(
                f"{request.catalog} has reviewed gold on {len(held) + len(trained)} products: review at least "
                "2 (one to train on, one held back to prove the gain), better a hundred."
            )
        reviewed = gold.reviewed_gold(request.catalog)
        job = TrainingJob.objects.create(
            catalog=request.catalog,
            parent=default_version(request.catalog),
            minutes=minutes,
            seed=request.seed,
            holdout_share=share,
            max_steps=request.max_steps or settings.TRAINING_MAX_STEPS,
            batch_tokens=request.batch_tokens or settings.TRAINING_BATCH_TOKENS,
            held_back=held,
            trained_on=trained,
            counts={
                "trained": gold.counts_by_provenance(reviewed.filter(product_id__in=trained)),
                "held_back": gold.counts_by_provenance(reviewed.filter(product_id__in=held)),
            },
            created_by=user,
        )
        transaction.on_commit(lambda: send_job(job.pk))
    return job


def send_job(job_id: int) -> bool:
    """The job's wake-up on the train queue; a broker that is down is logged (the reaper re-sends)."""
    if not job_wakeup.has_listeners(TrainingJob):
        raise ImproperlyConfigured(
            "No receiver wakes training jobs: the workers app is not installed or not ready."
        )
    try:
        job_wakeup.send(sender=TrainingJob, job_id=job_id)
    except (BrokerError, OSError) as exc:
        log.warning("could not send training job %s (the reaper retries): %s", job_id, exc)
        return False
    return True


def do_cancel_job(job_id: int) -> TrainingJob | None:
    """A queued job ends at once; a running one stops at its next step (its worker asks about once
    a second) and is marked cancelled then; no version is stored."""
    with transaction.atomic():
        job = TrainingJob.objects.select_for_update().defer("checkpoint").filter(pk=job_id).first()
        if job is None or not job.is_active:
            return job
        add_event(job, "cancelled")
        job.status, job.finished_at, job.checkpoint = TrainingJob.Status.CANCELLED, timezone.now(), b""
        job.phase = ""
        job.save()
    return job


def finish_cancelled(job_id: int) -> None:
    """The worker of a cancelled job stopped: nothing more to write (the cancel said it all)."""
    log.info("training job %s: its worker stopped (cancelled or taken over)", job_id)


def resume_stalled_jobs(now=None) -> list[int]:
    """Running jobs whose heartbeat is older than TRAINING_STALE_SECONDS go back to the queue (their
    next worker resumes from the last checkpoint), or fail after TRAINING_MAX_ATTEMPTS; queued jobs
    that waited that long get their message again (lost with Redis). Returns the jobs re-sent."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.TRAINING_STALE_SECONDS)
    resent = []
    for job_id in TrainingJob.objects.filter(
        status=TrainingJob.Status.RUNNING, heartbeat_at__lt=stale
    ).values_list("pk", flat=True):
        if _requeue_stalled(job_id, stale):
            resent.append(job_id)
    waiting = TrainingJob.objects.filter(status=TrainingJob.Status.QUEUED, created_at__lt=stale)
    for job_id in waiting.exclude(heartbeat_at__gte=stale).values_list("pk", flat=True):
        TrainingJob.objects.filter(pk=job_id).update(heartbeat_at=now)
        resent.append(job_id)
    for job_id in resent:
        send_job(job_id)
    return resent


def _requeue_stalled(job_id: int, stale) -> bool:
    with transaction.atomic():
        job = (
            TrainingJob.objects.select_for_update()
            .defer("checkpoint")
            .filter(pk=job_id, status=TrainingJob.Status.RUNNING, heartbeat_at__lt=stale)
            .first()
        )
        if job is None:
            return False
        silent = int((timezone.now() - job.heartbeat_at).total_seconds())
        lost = f"worker {job.owner} stopped at step {job.step} (no heartbeat for {silent} s)"
        if job.attempts >= settings.TRAINING_MAX_ATTEMPTS:
            add_event(job, f"{lost}; its workers stopped {job.attempts} times: the job failed")
            job.status, job.finished_at, job.checkpoint = TrainingJob.Status.FAILED, timezone.now(), b""
            job.error = f"its worker stopped {job.attempts} times (last: {lost}); no version was stored"
            job.save()
            return False
        where = (
            f"its checkpoint at step {job.checkpoint_step}"
            if job.checkpoint_step
            else "the start (no checkpoint yet)"
        )
        add_event(job, f"{lost}: back in the queue, to resume from {where}")
        job.status, job.owner, job.phase = TrainingJob.Status.QUEUED, "", ""
        job.heartbeat_at = timezone.now()
        job.save()
        return True


def wait_for_job(job_id: int, timeout: float, interval: float = 2.0) -> TrainingJob:
    """Poll the job's row until it ends (done, failed, cancelled) or `timeout` seconds pass; returns
    it as it then stands (for a management command that starts a job and waits for it)."""
    deadline = time.monotonic() + timeout
    while True:
        job = TrainingJob.objects.defer("checkpoint").get(pk=job_id)
        if not job.is_active or time.monotonic() >= deadline:
            return job
        time.sleep(interval)
