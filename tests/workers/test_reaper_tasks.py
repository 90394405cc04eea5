"""The periodic reaper's tasks, each called alone against real PostgreSQL and Redis (no worker
process): expired leases released, waiting runs woken, stranded uploads removed with their files,
model load failures counted; and beat's schedule as the Celery app defines it."""

from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from catalog.models import ImportJob, RemovedUpload
from extraction.models import ModelLoadFailure, Run, WorkItem
from extraction.services import RunRequest, do_cancel_run, do_start_run
from runner.failures import do_record_load_failure
from runner.leases import lease_batch
from tests.support.catalog import latest_job, map_columns, upload
from tests.support.runs_catalog import make_catalog
from workers import tasks
from workers.celery import app

LONG_AGO = timedelta(hours=1)


@pytest.fixture
def broker():
    """This test's Redis database, emptied: the reaper's wake-ups are counted in the `gpu` queue."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()


def start_run(products: int = 4, **kwargs) -> Run:
    catalog = make_catalog(name=f"Shop {Run.objects.count()}", shoes=products, coffee=0)
    return do_start_run(RunRequest(decoder="hpd", catalog=catalog, batch_size=2, **kwargs))[0]


def expire(items, by=timedelta(seconds=1)) -> None:
    WorkItem.objects.filter(id__in=[item.id for item in items]).update(lease_expires_at=timezone.now() - by)


def quiet_since_long_ago(run: Run) -> None:
    """The run's last wake-up was sent long ago (the reaper only re-sends after two lease times)."""
    Run.objects.filter(pk=run.pk).update(last_kick_at=timezone.now() - LONG_AGO)


@pytest.mark.django_db
def test_it_releases_expired_leases_and_leaves_live_ones_alone(broker):
    run = start_run(products=6)
    dead = lease_batch(run.id, "dead@gone/pid1", 2, lease_seconds=600)
    alive = lease_batch(run.id, "alive@here/pid2", 2, lease_seconds=600)
    expire(dead)
    assert tasks.release_expired_leases() == 2
    released = WorkItem.objects.filter(id__in=[item.id for item in dead])
    assert {(item.status, item.lease_owner, item.lease_expires_at, item.attempts) for item in released} == {
        (WorkItem.Status.QUEUED, "", None, 1)  # attempts kept: max_attempts still counts the deaths
    }
    assert set(
        WorkItem.objects.filter(id__in=[i.id for i in alive]).values_list("status", "lease_owner")
    ) == {(WorkItem.Status.LEASED, "alive@here/pid2")}
    assert tasks.release_expired_leases() == 0


@pytest.mark.django_db
def test_it_cancels_a_dead_workers_items_in_a_cancelled_run_and_finishes_the_run(broker):
    run = start_run(products=4)
    dead = lease_batch(run.id, "dead@gone/pid1", 2, lease_seconds=600)
    do_cancel_run(run.id)
    assert Run.objects.get(pk=run.id).finished_at is None  # a leased batch may still be recorded
    expire(dead)
    assert tasks.release_expired_leases() == 2
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.finished_at is not None
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}


@pytest.mark.django_db
def test_it_wakes_only_runs_whose_work_waits_with_no_live_lease(broker):
    waiting, covered, just_kicked = start_run(), start_run(), start_run()
    lease_batch(covered.id, "alive@here/pid2", 2, lease_seconds=600)
    quiet_since_long_ago(waiting)
    quiet_since_long_ago(covered)
    Run.objects.filter(pk=just_kicked.pk).update(last_kick_at=timezone.now())
    broker.flushdb()  # every wake-up the three runs were started with is lost
    assert tasks.wake_waiting_runs() == [waiting.id]
    assert broker.llen("gpu") >= 1  # a gpu_process_run message a worker will take
    waiting.refresh_from_db()
    assert timezone.now() - waiting.last_kick_at < timedelta(seconds=5)
    assert tasks.wake_waiting_runs() == []  # kicked, not spammed: the next one after two lease times


def test_beat_runs_each_reaper_task_at_the_interval_settings_give():
    schedule = app.conf.beat_schedule
    assert {name: (entry["task"], entry["schedule"]) for name, entry in schedule.items()} == {
        "release-expired-leases": ("workers.tasks.release_expired_leases", settings.REAPER_INTERVAL_SECONDS),
        "wake-waiting-runs": ("workers.tasks.wake_waiting_runs", settings.REAPER_INTERVAL_SECONDS),
        "resume-stalled-training": (
            "workers.tasks.resume_stalled_training",
            settings.REAPER_INTERVAL_SECONDS,
        ),
        "remove-stranded-uploads": (
            "workers.tasks.remove_stranded_uploads",
            settings.STRANDED_UPLOAD_SWEEP_SECONDS,
        ),
    }
    for entry in schedule.values():
        assert app.amqp.router.route({}, entry["task"])["queue"].name == "light"  # never behind a batch


CSV = "sku,title,category\nA1,Acme TV 55 inch,TV\n"


def uploaded(client, name: str, age: timedelta, mapped: bool = False) -> ImportJob:
    response = upload(client, CSV, name=name, catalog="Uploads")
    assert response.status_code == 302, response.content.decode()[:500]
    job = latest_job()
    if mapped:
        assert map_columns(client, job).status_code == 302
    ImportJob.objects.filter(pk=job.pk).update(created_at=timezone.now() - age)
    job.refresh_from_db()
    assert default_storage.exists(job.file.name)
    return job


@pytest.mark.django_db(transaction=True)  # the file goes when the removal commits
def test_it_removes_uploads_left_at_mapping_past_the_limit_with_their_files(client_for, alice, settings):
    settings.STRANDED_UPLOAD_MAX_AGE_HOURS = 24
    client = client_for(alice)
    stranded = uploaded(client, "old.csv", timedelta(hours=25))
    stranded_mapped = uploaded(client, "old-mapped.csv", timedelta(days=3), mapped=True)
    fresh = uploaded(client, "fresh.csv", timedelta(hours=23))
    imported = uploaded(client, "imported.csv", timedelta(days=3))
    ImportJob.objects.filter(pk=imported.pk).update(status=ImportJob.Status.DONE)

    removed_ids = tasks.remove_stranded_uploads()

    assert sorted(removed_ids) == sorted([stranded.pk, stranded_mapped.pk])
    assert set(ImportJob.objects.values_list("pk", flat=True)) == {fresh.pk, imported.pk}
    assert not default_storage.exists(stranded.file.name) and not default_storage.exists(
        stranded_mapped.file.name
    )
    assert default_storage.exists(fresh.file.name) and default_storage.exists(imported.file.name)
    records = {r.original_name: r for r in RemovedUpload.objects.all()}
    assert set(records) == {"old.csv", "old-mapped.csv"}
    record = records["old-mapped.csv"]
    assert (record.job_id, record.status, record.catalog_name, record.uploaded_by) == (
        stranded_mapped.pk,
        ImportJob.Status.MAPPED,
        "Uploads",
        "alice",
    )
    assert record.file_name == stranded_mapped.file.name and record.size_bytes == len(CSV)
    assert tasks.remove_stranded_uploads() == []


@pytest.mark.django_db
def test_a_run_waits_with_each_load_failure_shown_and_fails_at_the_limit(client_for, bob, settings, broker):
    settings.EXTRACTION_MAX_LOAD_FAILURES = 3
    run = start_run(model_dir="/models/broken")
    page = reverse("extraction:detail", args=[run.id])
    assert do_record_load_failure(run.id, "gpu1@a/pid7", run.model_dir, "OSError: CUDA out of memory")
    html = client_for(bob).get(page).content.decode()
    assert (
        "worker gpu1@a/pid7 could not load model /models/broken: OSError: CUDA out of memory; "
        "waiting for another worker (the run fails after 3 failed loads, 1 so far)"
    ) in html
    assert do_record_load_failure(run.id, "gpu2@b/pid8", run.model_dir, "ValueError: bad config")
    assert not do_record_load_failure(run.id, "gpu1@a/pid7", run.model_dir, "ValueError: bad config")
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert run.error == (
        "model /models/broken could not be loaded (3 failed loads, by gpu1@a/pid7, gpu2@b/pid8): "
        "ValueError: bad config"
    )
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}
    assert "waiting for another worker" not in client_for(bob).get(page).content.decode()
    assert not do_record_load_failure(run.id, "gpu3@c/pid9", run.model_dir, "late")  # over: not recorded
    assert ModelLoadFailure.objects.filter(run=run).count() == 3


@pytest.mark.django_db
def test_a_worker_that_cannot_load_the_model_does_not_fail_a_run_another_worker_serves(settings, broker):
    settings.EXTRACTION_MAX_LOAD_FAILURES = 1
    run = start_run(model_dir="/models/only-on-some-workers")
    Run.objects.filter(pk=run.pk).update(model_name="loaded-by-another-worker")
    assert do_record_load_failure(run.id, "gpu1@a/pid7", run.model_dir, "OSError: no such file")
    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED
