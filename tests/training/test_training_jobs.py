"""Training jobs end to end on real Celery `train` workers, PostgreSQL and Redis, with the engine's
real trainer on the real small model (a few steps of short rows): start, live progress, proof on
the held-back products, a stored version, promotion and undo; cancel; a worker killed mid-job whose
job resumes from its checkpoint on another worker; a job whose workers keep dying fails cleanly."""

import time
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from extraction.services import RunRequest, do_start_run
from registry.archive import sha256_hex
from registry.models import ModelVersion
from registry.versions import default_version, do_promote, do_undo_promotion, shipped_version
from review.models import GoldValue
from tests.support.training import TINY_JOB_ENV, reviewed_catalog, tiny_job
from tests.support.workers import start_worker, stop_worker, wait_for_log, wait_until
from tools.worker_processes import kill_worker
from training.models import TrainingJob
from training.services import do_cancel_job, resume_stalled_jobs, wait_for_job

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

JOB_TIMEOUT = 600  # seconds: the machine is shared with other training


@pytest.fixture(autouse=True)
def empty_queue():
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def train_workers(tmp_path):
    started = []

    def start(name: str, **env):
        proc = start_worker(
            queues="train", name=name, env={**TINY_JOB_ENV, **env}, log_path=tmp_path / f"{name}.log"
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop_worker(proc, timeout=15)


def job_row(job_id: int) -> TrainingJob:
    return TrainingJob.objects.defer("checkpoint").get(pk=job_id)


def test_it_trains_proves_stores_a_version_and_promotion_can_be_undone(train_workers, alice):
    catalog = reviewed_catalog()
    job = tiny_job(catalog, user=alice)
    # drawn before training, by product: blind labels first, the catalog's known values never
    assert job.counts["held_back"]["products"] == 2 and job.counts["held_back"]["blind"] == 4
    assert job.counts["trained"] == {"blind": 0, "corrected": 4, "accepted": 4, "values": 8, "products": 4}
    assert not set(job.held_back) & set(job.trained_on)
    assert job.parent == shipped_version()
    train_workers("t1")
    seen = wait_until(
        lambda: job_row(job.pk).step >= 1 and job_row(job.pk), timeout=JOB_TIMEOUT, what="a step"
    )
    assert seen.loss is not None and seen.loss > 0 and seen.train_seconds > 0
    job = wait_for_job(job.pk, timeout=JOB_TIMEOUT)
    assert job.status == TrainingJob.Status.DONE, job.error
    assert job.step == 2 and job.attempts == 1 and job.checkpoint == b""
    proof = job.evaluation
    assert proof["old"]["products"] == proof["new"]["products"] == 2
    assert {row["attribute"] for row in proof["changes"]} == {"Brand", "Color"}
    assert 0 <= proof["old"]["f1"] <= 1 and 0 <= proof["new"]["f1"] <= 1
    version = ModelVersion.objects.get(kind=ModelVersion.Kind.TRAINED)
    assert job.result == version and version.catalog == catalog and version.parent == shipped_version()
    assert version.sha256 == sha256_hex(bytes(version.archive)) and version.size_bytes == len(version.archive)
    assert version.data_counts["trained"]["products"] == 4 and version.created_by == alice
    assert version.status == ModelVersion.Status.CANDIDATE and default_version(catalog) == shipped_version()

    do_promote(version, user=alice)
    assert default_version(catalog) == version
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    assert run.model_version == version and run.model_dir == f"version:{version.pk}"
    do_undo_promotion(catalog, user=alice)
    assert default_version(catalog) == shipped_version()
    assert ModelVersion.objects.get(pk=version.pk).status == ModelVersion.Status.CANDIDATE
    assert do_start_run(RunRequest(decoder="ar", catalog=catalog))[0].model_version == shipped_version()


def test_a_cancelled_job_stops_at_its_next_step_and_stores_nothing(train_workers, tmp_path):
    catalog = reviewed_catalog()
    job = tiny_job(catalog, minutes=10, max_steps=1000)
    train_workers("t1")
    wait_until(lambda: job_row(job.pk).step >= 1, timeout=JOB_TIMEOUT, what="a step")
    do_cancel_job(job.pk)
    wait_for_log(tmp_path / "t1.log", "its worker stopped (cancelled or taken over)", timeout=120)
    stopped_at = job_row(job.pk).step
    time.sleep(3)
    job = job_row(job.pk)
    assert job.status == TrainingJob.Status.CANCELLED and job.step == stopped_at < 1000
    assert job.checkpoint == b"" and job.result is None
    assert not ModelVersion.objects.filter(kind=ModelVersion.Kind.TRAINED).exists()


def test_a_killed_worker_s_job_resumes_from_its_checkpoint_on_another_worker(train_workers, settings):
    settings.TRAINING_STALE_SECONDS = 4
    catalog = reviewed_catalog()
    job = tiny_job(catalog, minutes=10, max_steps=3)
    first = train_workers("t1")
    checkpointed = wait_until(
        lambda: (row := job_row(job.pk)).checkpoint_step >= 1 and row,
        timeout=JOB_TIMEOUT,
        what="a checkpoint",
    )
    kill_worker(first)
    assert not ModelVersion.objects.filter(kind=ModelVersion.Kind.TRAINED).exists()  # nothing half-stored
    wait_until(lambda: resume_stalled_jobs() == [job.pk], timeout=30, what="the reaper to requeue the job")
    resumed_from = job_row(job.pk).checkpoint_step
    assert resumed_from >= checkpointed.checkpoint_step
    train_workers("t2")
    job = wait_for_job(job.pk, timeout=JOB_TIMEOUT)
    assert job.status == TrainingJob.Status.DONE, job.error
    assert job.attempts == 2 and job.step == 3 and job.owner.startswith("t2@")
    texts = [event["text"] for event in job.events]
    assert any("stopped at step" in t and "resume from its checkpoint" in t for t in texts), texts
    assert any(f"training from its checkpoint at step {resumed_from}" in t for t in texts), texts
    assert ModelVersion.objects.filter(kind=ModelVersion.Kind.TRAINED).count() == 1


def test_a_job_whose_workers_keep_dying_fails_saying_so_and_stores_nothing(settings):
    settings.TRAINING_STALE_SECONDS = 2
    settings.TRAINING_MAX_ATTEMPTS = 2
    catalog = reviewed_catalog()
    job = tiny_job(catalog)
    TrainingJob.objects.filter(pk=job.pk).update(
        status=TrainingJob.Status.RUNNING,
        owner="t9@host/pid1",
        attempts=2,
        step=3,
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    assert resume_stalled_jobs() == []
    job = job_row(job.pk)
    assert job.status == TrainingJob.Status.FAILED and job.finished_at is not None
    assert "its worker stopped 2 times" in job.error and "worker t9@host/pid1 stopped at step 3" in job.error
    assert not ModelVersion.objects.filter(kind=ModelVersion.Kind.TRAINED).exists()


def test_bulk_accepted_and_catalog_values_are_never_trained_on(db):
    catalog = reviewed_catalog()
    GoldValue.objects.filter(provenance=GoldValue.Provenance.ACCEPTED).update(
        provenance=GoldValue.Provenance.CATALOG
    )
    job = tiny_job(catalog)
    assert job.counts["trained"]["accepted"] == job.counts["held_back"]["accepted"] == 0
    assert len(job.held_back) + len(job.trained_on) == 4  # the two blind and the two corrected shoes
