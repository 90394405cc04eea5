"""A worker's work done in the calling process: a command-line measurement (`manage.py
simulate_review`) decodes its run and trains its model here instead of waiting for Celery workers.

The same functions a worker's tasks call (runner.loop.process_run, runner.training.job.run_job),
under an owner that names this process, so leases, heartbeats and records are a worker's. The
wake-up messages the product sends meanwhile stay harmless: a real worker that takes one finds the
work leased or claimed, or helps with it.
"""

import os
import socket
from dataclasses import dataclass

from catalog.models import Catalog
from extraction.models import Run
from registry.versions import default_version, do_promote
from runner.loop import process_run
from runner.training.evaluation import better_beyond_interval
from runner.training.job import run_job
from training.models import TrainingJob
from training.services import JobRefused, JobRequest, start_training_job


def owner() -> str:
    return f"inline@{socket.gethostname()}/pid{os.getpid()}"


def decode_run(run: Run) -> Run:
    """Decode every product of `run` in this process (loading the model once), until it is over."""
    while not process_run(run.pk, owner(), wake=lambda *args, **kwargs: False):
        pass  # a time slice ended (settings.EXTRACTION_TASK_SECONDS): go on where it stopped
    run.refresh_from_db()
    return run


@dataclass(frozen=True)
class JobSize:
    """A training job as the "Improve the model" form starts it; None: the installation's setting."""

    minutes: float | None = None
    max_steps: int | None = None
    batch_tokens: int | None = None
    seed: int = 0


def train_and_promote(catalog: Catalog, size: JobSize, user=None) -> TrainingJob | None:
    """Start a training job on the catalog's reviewed gold, run it here, and promote its version when
    it beats the old one beyond its interval (the rule of TRAINING_AUTO_PROMOTE). None: the product
    refuses a job now (too little reviewed gold, a job under way)."""
    try:
        job = start_training_job(
            JobRequest(
                catalog,
                minutes=size.minutes,
                seed=size.seed,
                max_steps=size.max_steps,
                batch_tokens=size.batch_tokens,
            ),
            user=user,
        )
    except JobRefused:
        return None
    run_job(job.pk, owner())
    job = TrainingJob.objects.defer("checkpoint").select_related("result").get(pk=job.pk)
    promote = job.status == TrainingJob.Status.DONE and job.result and better_beyond_interval(job.evaluation)
    if promote and default_version(catalog).pk != job.result.pk:  # TRAINING_AUTO_PROMOTE may have done it
        do_promote(job.result, user=user)
    return job
