"""One run, one model, whichever machine decodes it: a worker whose copy of the run's model has
another fingerprint leases nothing, says so on the run page, and a worker whose copy matches decodes
the run (real Celery workers, each given its own copy of the small model as its bundled model). That
the first worker records its copy's fingerprint on a run is checked in test_runs_workers.py."""

import time
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.urls import reverse

from extraction.engine.fingerprint import model_fingerprint
from extraction.models import ExtractedValue, Run, RunIncident, WorkItem
from extraction.services import RunRequest, do_start_run
from tests.support.model_copies import model_copy
from tests.support.runs_catalog import make_catalog
from tests.support.workers import start_worker, stop_worker, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 240


@pytest.fixture(autouse=True)
def empty_queue():
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def workers(tmp_path):
    started = []

    def start(name: str, model_dir: Path):
        proc = start_worker(
            queues="gpu",
            name=name,
            env={"SLOTWISE_MODEL_DIR": str(model_dir), "EXTRACTION_LEASE_SECONDS": "6"},
            log_path=tmp_path / f"{name}.log",
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        stop_worker(proc, timeout=15)


def finished(run: Run) -> Run | None:
    run.refresh_from_db()
    return None if run.is_active else run


def drop_a_word_end_rule(stored: dict) -> None:
    """Another host's slotwise.json: one attribute may end anywhere, so some values come out longer."""
    stored["word_end"] = stored["word_end"][1:]


def test_a_worker_whose_copy_differs_leaves_the_run_to_one_whose_copy_matches(
    workers, tmp_path, client_for, alice
):
    same = model_copy(tmp_path / "host-a")
    edited = model_copy(tmp_path / "host-b", drop_a_word_end_rule)
    catalog = make_catalog(shoes=3, coffee=2)
    # The run decodes with the shipped copy, as if a worker on host A had started it: the small
    # model asks for no CPU precision, so a CPU worker decodes it in float32.
    shipped = model_fingerprint(same, "float32")
    assert model_fingerprint(edited, "float32") != shipped
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog, batch_size=2))[0]
    Run.objects.filter(pk=run.pk).update(model_fingerprint=shipped)

    workers("host-b", edited)
    incident = wait_until(
        lambda: RunIncident.objects.filter(run=run, kind=RunIncident.Kind.MODEL_MISMATCH).first(),
        RUN_TIMEOUT,
        what="host-b's refusal",
    )
    assert incident.worker.startswith("host-b@")
    assert f"and the run decodes with {shipped[:12]}" in incident.message
    assert "its products stay queued for a worker whose copy matches" in incident.message
    time.sleep(3)  # host-b had every chance to lease: it took nothing
    assert set(WorkItem.objects.filter(run=run).values_list("status", flat=True)) == {"queued"}
    assert not ExtractedValue.objects.filter(run=run).exists()
    assert RunIncident.objects.filter(run=run).count() == 1  # its own wake-ups brought no second one

    workers("host-a", same)  # a worker whose copy matches takes the batches
    run = wait_until(lambda: finished(run), RUN_TIMEOUT, what="the run on host-a")
    assert run.status == Run.Status.DONE and (run.done, run.failed) == (5, 0)
    done_by = {
        owner.split("@")[0] for owner in WorkItem.objects.filter(run=run).values_list("done_by", flat=True)
    }
    assert done_by == {"host-a"}
    assert run.model_fingerprint == shipped
    page = client_for(alice).get(reverse("extraction:detail", args=[run.pk])).content.decode()
    assert "did not decode this run: its copy of model" in page
    assert f"fingerprint {shipped[:12]}" in page
