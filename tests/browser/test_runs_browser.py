"""An admin starts a run on the demo catalog in Chromium and watches it finish, live, through htmx."""

import os

import pytest
import redis
from django.conf import settings
from django.core.management import call_command

from extraction.models import ExtractedValue, Run, WorkItem
from extraction.services import RunRequest, do_start_run
from tests.support.browser import chromium_page, sign_in
from tests.support.runs_catalog import make_catalog
from tests.support.workers import start_worker, stop_worker

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def gpu_worker(tmp_path):
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # no stale wake-ups from earlier tests
    proc = start_worker(queues="gpu", name="browser-gpu", log_path=tmp_path / "worker.log")
    yield proc
    stop_worker(proc, timeout=15)


def test_an_admin_starts_a_run_on_the_demo_catalog_and_watches_it_finish(
    live_server, alice, password, gpu_worker
):
    call_command("load_demo_catalog", stdout=open(os.devnull, "w"))  # noqa: SIM115
    with chromium_page() as page:
        sign_in(page, live_server.url, "alice", password)
        page.click("nav >> text=Runs")
        page.click("#start-run")
        page.select_option("#id_catalog", label="OA-Mine demo")
        page.select_option("#id_category", label="Shoes")
        page.fill("#id_search", "Stacy Adams")
        page.wait_for_selector("#selection-count:has-text('5 products selected')")
        page.check("input[name=decoder][value=hpd]")
        page.click("#start-submit")

        page.wait_for_selector("#run-progress")
        assert "Queued 5 products" in page.inner_text(".messages")
        # The progress block polls every second; it shows Done without any reload.
        page.wait_for_selector("#run-status:has-text('Done')", timeout=240_000)
        assert page.inner_text("#run-counts") == "5 / 5"
        assert page.inner_text("#run-failed") == "0"
        page.wait_for_function("document.querySelectorAll('#results-table tr.item-done').length === 5")
        assert page.locator("#results-table .chip").count() == 5 * 9  # Shoes has 9 attributes
        # The summary reloads by itself once the run ends: the worker's model and totals, no reload (QA).
        page.wait_for_selector("#run-model:not(:has-text('loads when'))")
        assert int(page.inner_text("#run-forward-steps").split()[0]) > 0

    run = Run.objects.get()
    assert run.status == Run.Status.DONE and run.created_by == alice
    assert set(WorkItem.objects.filter(run=run).values_list("product__title", flat=True)) == set(
        run.catalog.products.filter(category__name="Shoes", title__icontains="Stacy Adams").values_list(
            "title", flat=True
        )
    )
    assert ExtractedValue.objects.filter(run=run).count() == 5 * 9


def test_a_run_page_says_each_phase_queued_behind_loading_decoding_done(
    live_server, alice, password, tmp_path
):
    redis.Redis.from_url(settings.REDIS_URL).flushdb()  # no stale wake-ups from earlier tests
    first = do_start_run(RunRequest(decoder="hpd", catalog=make_catalog(shoes=36, coffee=0), batch_size=2))[0]
    second = do_start_run(RunRequest(decoder="hpd", catalog=make_catalog("Later", shoes=2, coffee=0)))[0]
    with chromium_page() as page:
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/runs/{second.id}/")
        assert page.inner_text("#run-phase").startswith("Queued behind 1 run")
        page.goto(f"{live_server.url}/runs/{first.id}/")
        assert page.inner_text("#run-phase") == "Queued: waiting for a free worker"
        # every phase the polled block shows, as a person watching would see them
        page.evaluate(
            """window.seen = []; setInterval(() => { const p = document.getElementById('run-phase');
               if (p && window.seen[window.seen.length - 1] !== p.innerText) window.seen.push(p.innerText); }, 100);"""
        )
        worker = start_worker(queues="gpu", name="phases-gpu", log_path=tmp_path / "worker.log")
        try:
            page.wait_for_selector("#run-status:has-text('Done')", timeout=240_000)
            # the sampler above looks every 100 ms: let it record the phase the finished block shows
            page.wait_for_function(
                "window.seen.length && window.seen[window.seen.length - 1].startsWith('Done')", timeout=5_000
            )
            seen = page.evaluate("window.seen")
        finally:
            stop_worker(worker, timeout=15)
    assert seen[0] == "Queued: waiting for a free worker" and seen[-1].startswith("Done: 36 products in")
    assert any(s.startswith("Loading the model") for s in seen), seen
    assert any(s.startswith("Decoding") for s in seen), seen
    # once a batch was written, the rate and the time left. The run has 18 batches of 2 so the rate
    # stays on screen for several of the page's one-second polls even on a fast machine (12 products
    # in 6 batches once decoded in 2 s on an AVX-512 host, between two polls); the exact words are
    # pinned in tests/extraction/test_run_phases.py.
    assert any(" products/s, about " in s for s in seen) or any(s.startswith("Writing") for s in seen), seen
