"""A worker that serves one model version after another (the learning job promotes new ones) keeps
at most EXTRACTION_MODEL_CACHE_MB of models loaded: the version it used longest ago is dropped, and a
run of a dropped version loads it again and decodes what it decoded before. A real Celery worker,
PostgreSQL and Redis; three stored versions of the small model, each its own bytes and fingerprint.
What the worker holds is read from the line it logs after each load (runner/decoding.py)."""

import re
from pathlib import Path

import pytest
import redis
from django.conf import settings

from extraction.models import ExtractedValue, Run
from extraction.services import RunRequest, do_start_run
from tests.support.model_copies import stored_small_model
from tests.support.runs_catalog import make_catalog
from tests.support.workers import start_worker, stop_worker, wait_for_log, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

RUN_TIMEOUT = 240
MB = 1024 * 1024
HELD = re.compile(r"models loaded in this process: (\d+), (\d+) bytes of a (\d+)-byte budget \((.*)\)")


@pytest.fixture(autouse=True)
def empty_queue():
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


def small_model_bytes() -> int:
    return (Path(settings.FAST_MODEL_DIR) / "model.safetensors").stat().st_size


def decoded(catalog, version) -> dict[tuple[str, str], tuple[str, float]]:
    """Start a run of `version`, wait for the worker to finish it -> its values."""
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog, model_dir=f"version:{version.pk}"))[0]
    over = Run.objects.filter(pk=run.pk).exclude(status__in=Run.ACTIVE_STATUSES)
    run = wait_until(over.first, RUN_TIMEOUT, what=f"the run of {version.name}")
    assert run.status == Run.Status.DONE and (run.done, run.failed) == (3, 0), run.error
    rows = ExtractedValue.objects.filter(run=run).values_list(
        "product__sku", "attribute__name", "value", "confidence"
    )
    return {(sku, name): (value, confidence) for sku, name, value, confidence in rows}


def test_a_worker_that_served_three_versions_holds_at_most_its_budget(tmp_path):
    catalog = make_catalog(shoes=2, coffee=1)
    v1, v2, v3 = (stored_small_model(catalog, tmp_path, name) for name in ("v1", "v2", "v3"))
    budget_mb = int(2.5 * small_model_bytes() / MB)  # two of its versions fit, three do not
    log = tmp_path / "w1.log"
    worker = start_worker(
        queues="gpu",
        name="w1",
        env={"EXTRACTION_MODEL_CACHE_MB": str(budget_mb), "MODEL_CACHE_DIR": str(tmp_path / "unpacked")},
        log_path=log,
    )
    try:
        decoded(catalog, v2)
        first_v1 = decoded(catalog, v1)
        decoded(catalog, v2)  # v2 is now the more recently used of the two
        decoded(catalog, v3)  # over the budget: v1, used longest ago, is dropped
        decoded(catalog, v2)  # held still: no load
        again_v1 = decoded(catalog, v1)  # loaded again; v3 goes
        wait_for_log(log, f"dropped model version:{v3.pk} on cpu", timeout=30)
    finally:
        stop_worker(worker, timeout=15)

    text = log.read_text(errors="replace")
    loads = re.findall(r"loading model version:(\d+) on cpu", text)
    assert loads == [str(v.pk) for v in (v2, v1, v3, v1)]
    dropped = re.findall(r"dropped model version:(\d+) on cpu", text)
    assert dropped == [str(v1.pk), str(v3.pk)]
    held = [(int(n), int(nbytes), int(budget), names) for n, nbytes, budget, names in HELD.findall(text)]
    assert len(held) == 4 and all(budget == budget_mb * MB for *_, budget, _ in held)
    assert all(n <= 2 and nbytes <= budget for n, nbytes, budget, _ in held)
    assert held[-1][0] == 2 and held[-1][3] == f"version:{v2.pk} on cpu, version:{v1.pk} on cpu"
    assert again_v1 == first_v1  # the dropped version, loaded again, decodes what it did
