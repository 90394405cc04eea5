"""A training job on a `train` worker: claim it, fine-tune with the engine, prove, register.

PostgreSQL holds everything a job needs to go on elsewhere: a heartbeat thread renews the job's
claim while this worker holds it; each checkpoint (the adapter as it stands, an archive) is stored
in the job's row with its step and training seconds. When a worker dies the heartbeat stops, the
reaper (training/services.py, beat's resume_stalled_training) puts the job back in the queue, and
the next worker resumes from the last checkpoint, or the job fails saying what happened once its
workers died settings.TRAINING_MAX_ATTEMPTS times. The new version, its bytes and the job's result
are written in one transaction at the very end: a job never leaves a half-registered version.
"""

import logging
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from catalog.models import Product
from extraction.engine.decode.stopping import Cancelled  # torch-free: the evaluation's decoding stops with it
from registry import cache
from registry.archive import pack, sha256_hex, unpack
from registry.models import ModelVersion
from registry.versions import do_promote
from runner.decoding import engine_model_dir
from runner.training import evaluation
from training import gold
from training.models import TrainingJob
from training.services import add_event, finish_cancelled

log = logging.getLogger(__name__)

STOP_CHECK_SECONDS = 1.0  # how often training asks whether the job was cancelled or taken over
PROGRESS_WRITE_SECONDS = 1.0  # at most one progress write per second


class LostClaim(Exception):
    """The job is no longer this worker's (cancelled, or taken over after a stall)."""


def claim(job_id: int, owner: str) -> TrainingJob | None:
    """Take the job if it is queued (a fresh or a resumed one); None when another worker holds it
    or it is over (a message delivered twice, or after the job ended)."""
    with transaction.atomic():
        job = TrainingJob.objects.select_for_update().defer("checkpoint").filter(pk=job_id).first()
        if job is None or job.status != TrainingJob.Status.QUEUED:
            return None
        now = timezone.now()
        job.status, job.owner, job.heartbeat_at = TrainingJob.Status.RUNNING, owner, now
        job.attempts += 1
        job.phase = TrainingJob.Phase.PREPARING
        job.started_at = job.started_at or now
        where = (
            f"from its checkpoint at step {job.checkpoint_step}" if job.checkpoint_step else "from the start"
        )
        add_event(job, f"worker {owner} took the job (attempt {job.attempts}), training {where}")
        job.save()
        return job


def owned(job_id: int, owner: str):
    return TrainingJob.objects.filter(pk=job_id, owner=owner, status=TrainingJob.Status.RUNNING)


class Heartbeat:
    """Renews the job's heartbeat every settings.TRAINING_HEARTBEAT_SECONDS while it trains."""

    def __init__(self, job_id: int, owner: str):
        self.job_id, self.owner = job_id, owner
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="training-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(settings.TRAINING_HEARTBEAT_SECONDS):
                owned(self.job_id, self.owner).update(heartbeat_at=timezone.now())
        finally:
            connection.close()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def stopper(job_id: int, owner: str):
    """should_stop for the engine: True once the job is not this worker's running job any more."""
    asked_at = 0.0

    def should_stop() -> bool:
        nonlocal asked_at
        if time.monotonic() - asked_at < STOP_CHECK_SECONDS:
            return False
        asked_at = time.monotonic()
        return not owned(job_id, owner).exists()

    return should_stop


def progress_writer(job_id: int, owner: str):
    """on_step for the engine: step, loss and training seconds into the job, at most once a second
    (and the last step always, from the caller's final write)."""
    written_at = 0.0

    def on_step(step: int, loss: float, seconds: float) -> None:
        nonlocal written_at
        if time.monotonic() - written_at < PROGRESS_WRITE_SECONDS:
            return
        written_at = time.monotonic()
        owned(job_id, owner).update(
            step=step, loss=loss, train_seconds=seconds, phase=TrainingJob.Phase.TRAINING
        )

    return on_step


def checkpoint_saver(job_id: int, owner: str, seconds_of):
    """on_save for the engine: the adapter as it stands, archived into the job's row."""

    def on_save(out: Path, step: int) -> None:
        data = pack(out)
        stored = owned(job_id, owner).update(
            checkpoint=data, checkpoint_step=step, checkpoint_seconds=seconds_of()
        )
        if stored:
            log.info("training job %s: checkpoint at step %d stored (%d bytes)", job_id, step, len(data))

    return on_save


def start_dir(job: TrainingJob, scratch: Path) -> tuple[Path, str]:
    """(the adapter to train from, the old version's directory to compare with): the checkpoint
    when the job resumes, else the parent version's adapter."""
    parent = job.parent
    if parent.is_shipped:
        origin, old = Path(settings.TRAINING_SHIPPED_ADAPTER), engine_model_dir("")
    else:
        origin = old = cache.local_dir(parent.pk)
    data = TrainingJob.objects.filter(pk=job.pk).values_list("checkpoint", flat=True).get()
    if not data:
        return origin, str(old)
    resumed = scratch / "checkpoint"
    resumed.mkdir()
    data = bytes(data)
    unpack(data, sha256_hex(data), resumed)
    return resumed, str(old)


def public_data() -> list[Path]:
    return [Path(p) for p in settings.TRAINING_PUBLIC_DATA if (Path(p) / "train.jsonl").is_file()]


def run_job(job_id: int, owner: str) -> None:
    """Claim and run the job to its end (done, cancelled, failed), or until its claim is lost."""
    job = claim(job_id, owner)
    if job is None:
        return
    try:
        with Heartbeat(job_id, owner), tempfile.TemporaryDirectory(prefix="slotwise-train-") as scratch:
            train_and_register(job, owner, Path(scratch))
    except (LostClaim, Cancelled):
        finish_cancelled(job_id)  # cancelled: say so; taken over: the new owner goes on
    except Exception as exc:  # noqa: BLE001 - any failure ends the job saying what happened
        log.exception("training job %s failed", job_id)
        fail(job_id, owner, f"{type(exc).__name__}: {exc}")


def fail(job_id: int, owner: str, error: str) -> None:
    with transaction.atomic():
        job = owned(job_id, owner).select_for_update().defer("checkpoint").first()
        if job is None:
            return
        add_event(job, f"failed on worker {owner}: {error}")
        job.status, job.error, job.finished_at, job.checkpoint = (
            TrainingJob.Status.FAILED,
            error,
            timezone.now(),
            b"",
        )
        job.save()


def train_and_register(job: TrainingJob, owner: str, scratch: Path) -> None:
    from extraction.engine.train.fine_tune import FineTune, fine_tune
    from extraction.engine.train.trainer import LoopHooks

    origin, old_dir = start_dir(job, scratch)
    held = set(job.held_back)
    excluded = frozenset(p.document for p in Product.objects.filter(pk__in=held))
    spent = {"seconds": job.checkpoint_seconds}
    write_progress = progress_writer(job.pk, owner)

    def on_step(step: int, loss: float, seconds: float) -> None:
        spent["seconds"] = seconds
        write_progress(step, loss, seconds)

    task = FineTune(
        start=origin,
        out=scratch / "out",
        reviewed=gold.training_records(job.catalog, job.trained_on),
        public=public_data(),
        public_ratio=settings.TRAINING_PUBLIC_RATIO,
        minutes=job.minutes,
        max_steps=job.max_steps,
        batch_tokens=job.batch_tokens,
        seed=job.seed,
        device=settings.SLOTWISE_DEVICE,
        save_every=settings.TRAINING_CHECKPOINT_MINUTES,
        excluded=excluded,
    )
    should_stop = stopper(job.pk, owner)
    hooks = LoopHooks(job.checkpoint_step, job.checkpoint_seconds, on_step, should_stop)
    result = fine_tune(task, hooks, checkpoint_saver(job.pk, owner, lambda: spent["seconds"]))
    if result["stopped"]:
        raise LostClaim()
    if not owned(job.pk, owner).update(
        step=result["steps"], train_seconds=spent["seconds"], phase=TrainingJob.Phase.EVALUATING
    ):
        raise LostClaim()
    held_gold = gold.held_back_gold(job.catalog, job.held_back)
    proof = evaluation.compare(old_dir, str(task.out), held_gold, settings.SLOTWISE_DEVICE, should_stop)
    register(job, owner, task.out, proof, result)


def register(job: TrainingJob, owner: str, out: Path, proof: dict, result: dict) -> None:
    """The version's row and bytes and the job's result in one transaction; then, when the setting
    allows and the gain is beyond the interval, the promotion."""
    owned(job.pk, owner).update(phase=TrainingJob.Phase.REGISTERING)
    data = pack(out)
    with transaction.atomic():
        locked = owned(job.pk, owner).select_for_update().defer("checkpoint").first()
        if locked is None:
            raise LostClaim()
        version = ModelVersion.objects.create(
            kind=ModelVersion.Kind.TRAINED,
            name=f"{job.catalog.name} · job {job.pk}",
            catalog=job.catalog,
            parent=job.parent,
            archive=data,
            sha256=sha256_hex(data),
            size_bytes=len(data),
            training_settings={"minutes": job.minutes, "steps": result["steps"], "seconds": result["seconds"],
                      "seed": job.seed, "batch_tokens": job.batch_tokens, "attempts": locked.attempts},
            data_counts={**job.counts, "public_ratio": settings.TRAINING_PUBLIC_RATIO},
            created_by=job.created_by,
        )  # fmt: skip
        add_event(locked, f"version {version.pk} stored ({len(data)} bytes, sha256 {version.sha256[:12]})")
        locked.status, locked.result, locked.evaluation = TrainingJob.Status.DONE, version, proof
        locked.finished_at, locked.checkpoint, locked.phase = timezone.now(), b"", ""
        locked.save()
    if settings.TRAINING_AUTO_PROMOTE and evaluation.better_beyond_interval(proof):
        do_promote(version, user=None, automatic=True)
