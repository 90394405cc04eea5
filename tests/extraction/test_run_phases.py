"""What a run says it is doing: queued behind N runs, loading the model, decoding (the first batch,
then a rate and the time left), writing, and how it ended; bars that match the counts."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from extraction.models import Run, WorkItem
from extraction.progress import progress
from extraction.services import RunRequest, do_cancel_run, do_start_run
from runner.leases import ItemOutcome, lease_batch, record_results
from runner.loop import set_phase
from tests.support.runs_catalog import make_catalog

pytestmark = pytest.mark.django_db


def start(catalog) -> Run:
    return do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]


def test_each_phase_in_words():
    first, second = start(make_catalog(shoes=6, coffee=4)), start(make_catalog("Other", shoes=2, coffee=0))
    assert progress(first).phase == "Queued: waiting for a free worker"
    assert progress(second).phase.startswith("Queued behind 1 run: workers take runs in the order")
    set_phase(first.id, Run.Phase.LOADING)
    first.refresh_from_db()
    assert progress(first).phase == "Loading the model (bundled)"
    items = lease_batch(first.id, "w1", 4)
    set_phase(first.id, Run.Phase.DECODING)
    first.refresh_from_db()
    assert (
        progress(first).phase
        == "Decoding the first batch: the rate and the time left show once it is written"
    )
    assert progress(second).phase.startswith("Queued behind 1 run")  # the running one is still ahead
    set_phase(first.id, Run.Phase.WRITING)
    first.refresh_from_db()
    assert progress(first).phase == "Writing a batch's values (0 of 10 done)"
    record_results(
        first.id,
        "w1",
        [ItemOutcome(i.id, error="RuntimeError: x") for i in items[:1]]
        + [ItemOutcome(i.id, {}) for i in items[1:]],
    )
    set_phase(first.id, Run.Phase.DECODING)
    Run.objects.filter(pk=first.pk).update(started_at=timezone.now() - timedelta(seconds=8))
    first.refresh_from_db()
    # 4 of 10 in 8 s: 0.5 products/s, 6 left: about 12 s
    assert progress(first).phase == "Decoding: 0.50 products/s, about 12 s left"
    do_cancel_run(first.id)
    first.refresh_from_db()
    assert progress(first).phase == "Cancelled after 3 of 10 products"
    assert progress(second).phase == "Queued: waiting for a free worker"


def test_a_cancelled_runs_bar_matches_its_counts(client_for, alice):
    run = start(make_catalog(shoes=6, coffee=4))
    items = lease_batch(run.id, "w1", 2)
    record_results(run.id, "w1", [ItemOutcome(i.id, {}) for i in items])
    run = do_cancel_run(run.id)
    assert WorkItem.objects.filter(run=run, status="cancelled").count() == 8
    assert progress(run).percent == 20.0
    body = client_for(alice).get(reverse("extraction:runs")).content.decode()
    assert 'title="2 / 10 done"><div style="width: 20%">' in body and "2 / 10 · 8 cancelled" in body
