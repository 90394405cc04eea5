"""The periodic reaper and model load failures with real Celery worker processes, a real `celery
beat`, PostgreSQL and Redis: a dead worker's lease released and its work completed, lost wake-ups
recovered by beat's own schedule, a model that fails to load on one worker served by another, and a
worker without a model refusing to decode with random weights."""

import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from extraction.models import ExtractedValue, ModelLoadFailure, Run, WorkItem
from extraction.services import RunRequest, do_start_run
from runner.leases import lease_batch
from tests.support.runs_catalog import make_catalog
from tests.support.workers import start_beat, start_worker, stop_worker, wait_for_log, wait_until
from workers import tasks

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 240  # seconds; the CPU model is slow and the machine is shared
FAST_MODEL = Path(settings.FAST_MODEL_DIR)


@pytest.fixture(autouse=True)
def empty_queue():
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def processes(tmp_path):
    """start("gpu", "w1") / start("beat") -> the process; all stopped at the end. Logs in tmp_path."""
    started = []

    def start(kind: str, name: str = "beat", **env):
        log = tmp_path / f"{name}.log"
        proc = start_beat(log, env) if kind == "beat" else start_worker(kind, name, env, log)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop_worker(proc)


def finished(run: Run) -> Run | None:
    run.refresh_from_db()
    return run if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING) else None


def run_left_by_a_dead_worker(products: int) -> tuple[Run, list[int]]:
    """A run whose every item a worker leased and then died with, its wake-ups lost with it."""
    catalog = make_catalog(shoes=products, coffee=0)
    run = do_start_run(
        RunRequest(decoder="hpd", catalog=catalog, model_dir=str(FAST_MODEL), batch_size=products)
    )[0]
    leased = [item.id for item in lease_batch(run.id, "dead@gone/pid1", products, lease_seconds=600)]
    assert len(leased) == products
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    return run, leased


def time_passes(run: Run, leased: list[int]) -> None:
    """The dead worker's lease runs out and the run's last wake-up is long past."""
    WorkItem.objects.filter(id__in=leased).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    Run.objects.filter(pk=run.pk).update(last_kick_at=timezone.now() - timedelta(hours=1))


def idle_gpu_worker(processes, tmp_path, name: str = "w1"):
    """A GPU worker that has started and made its start-up look for waiting work (found none)."""
    proc = processes("gpu", name)
    wait_for_log(tmp_path / f"{name}.log", "succeeded", timeout=RUN_TIMEOUT)  # its first task ended
    return proc


def test_the_reaper_releases_an_expired_lease_and_the_work_then_completes(processes, tmp_path):
    run, leased = run_left_by_a_dead_worker(products=3)
    idle_gpu_worker(processes, tmp_path)
    time_passes(run, leased)
    time.sleep(2)  # nobody is told: without the reaper the idle worker never looks again
    assert WorkItem.objects.filter(id__in=leased, status=WorkItem.Status.LEASED).count() == 3

    assert tasks.release_expired_leases() == 3
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {"queued"}
    assert tasks.wake_waiting_runs() == [run.id]

    run = wait_until(lambda: finished(run), timeout=RUN_TIMEOUT, what="the woken worker to finish the run")
    assert run.status == Run.Status.DONE and (run.done, run.failed) == (3, 0)
    items = WorkItem.objects.filter(run=run)
    assert all(item.attempts == 2 and item.writes == 1 and item.done_by.startswith("w1@") for item in items)


def test_beat_recovers_a_run_whose_worker_died_and_whose_wake_ups_were_lost(processes, tmp_path):
    run, leased = run_left_by_a_dead_worker(products=2)
    idle_gpu_worker(processes, tmp_path)
    time_passes(run, leased)
    kicked_before = Run.objects.get(pk=run.pk).last_kick_at
    processes("light", "light")  # runs the reaper's tasks
    processes("beat", REAPER_INTERVAL_SECONDS="1")

    run = wait_until(lambda: finished(run), timeout=RUN_TIMEOUT, what="beat's reaper to get the run done")
    assert run.status == Run.Status.DONE and run.done == 2
    assert run.last_kick_at > kicked_before  # beat's wake-up, not a worker's own look, woke it
    assert set(WorkItem.objects.filter(run=run).values_list("writes", "attempts")) == {(1, 2)}
    beat_log = (tmp_path / "beat.log").read_text()
    assert (
        "workers.tasks.release_expired_leases" in beat_log and "workers.tasks.wake_waiting_runs" in beat_log
    )


def test_a_model_that_fails_to_load_leaves_the_run_waiting_until_a_worker_can_load_it(
    processes, tmp_path, client_for, bob
):
    model_dir = tmp_path / "model"
    model_dir.mkdir()  # no config.json yet: nothing can load it
    catalog = make_catalog(shoes=3, coffee=0)
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog, model_dir=str(model_dir), batch_size=3))[0]
    processes("gpu", "broken")

    failure = wait_until(
        lambda: ModelLoadFailure.objects.filter(run=run).first(), timeout=RUN_TIMEOUT, what="a load failure"
    )
    assert failure.worker.startswith("broken@") and "config.json missing" in failure.error
    page = client_for(bob).get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert f"worker {failure.worker} could not load model {model_dir}: " in page
    assert "waiting for another worker" in page
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and run.error == ""
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {
        "queued"
    }  # no lease held

    shutil.copytree(FAST_MODEL, model_dir, dirs_exist_ok=True)  # the model is there now
    processes("gpu", "good")
    run = wait_until(lambda: finished(run), timeout=RUN_TIMEOUT, what="the good worker to finish the run")
    assert run.status == Run.Status.DONE and (run.done, run.failed) == (3, 0), run.error
    assert {
        owner.split("@")[0] for owner in WorkItem.objects.filter(run=run).values_list("done_by", flat=True)
    } == {"good"}
    page = client_for(bob).get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert "waiting for another worker" not in page and "failed model load" in page


def test_a_worker_without_a_model_never_decodes_with_random_weights_and_the_run_says_to_run_make_model(
    processes, tmp_path, client_for, bob
):
    """Issue 32: the engine's random stand-in is for its own tests and CLI; a worker whose
    SLOTWISE_MODEL_DIR holds no model (`make model` never ran there) refuses the default model's run,
    which fails with that error on its page, writing nothing and removing nothing."""
    not_made = tmp_path / "slotwise-gemma3"  # `make model` would assemble the default model here
    catalog = make_catalog(shoes=3, coffee=0)
    products = set(catalog.products.values_list("id", flat=True))
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog, batch_size=3))[0]
    assert run.model_dir == ""  # the default model, the shipped version
    processes("gpu", "w1", SLOTWISE_MODEL_DIR=str(not_made), EXTRACTION_MAX_LOAD_FAILURES="1")

    run = wait_until(lambda: finished(run), timeout=RUN_TIMEOUT, what="the run to fail")
    expected = f"No model is installed in {not_made}: run `make model` there"
    assert run.status == Run.Status.FAILED and expected in run.error, run.error
    assert (run.model_name, run.done) == ("", 0)  # nothing was loaded, nothing decoded
    assert not ExtractedValue.objects.filter(run=run).exists()
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {"cancelled"}
    assert set(catalog.products.values_list("id", flat=True)) == products
    page = client_for(bob).get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert "NoModelInstalled: No model is installed in" in page and "run `make model` there" in page
