"""A run page shows a worker's progress inside a batch (issue #52: AR sat 141 s with no visible change):
which batch of how many, how many products it holds, how long it has been decoding, counted every
poll; while a batch runs much longer than the rate so far says it should, the time left is not shown
as a number that sits still but as being re-estimated."""

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from extraction.models import Run
from extraction.progress import progress
from extraction.services import RunRequest, do_start_run
from runner.leases import ItemOutcome, lease_batch, record_results
from runner.loop import set_phase
from tests.support.runs_catalog import make_catalog

pytestmark = pytest.mark.django_db


def decoding_for(run: Run, seconds: float, started_seconds_ago: float | None = None) -> Run:
    """The run as a worker leaves it `seconds` into decoding its current batch."""
    set_phase(run.id, Run.Phase.DECODING)
    now = timezone.now()
    changes = {"phase_since": now - timedelta(seconds=seconds)}
    if started_seconds_ago is not None:
        changes["started_at"] = now - timedelta(seconds=started_seconds_ago)
    Run.objects.filter(pk=run.pk).update(**changes)
    run.refresh_from_db()
    return run


def progress_block(client, run: Run) -> str:
    return client.get(reverse("extraction:progress", args=[run.id])).content.decode()


def test_the_first_batch_says_which_batch_how_big_and_for_how_long(client_for, alice, bob):
    run = do_start_run(RunRequest(decoder="ar", catalog=make_catalog(shoes=6, coffee=4), batch_size=4))[0]
    lease_batch(run.id, "w1", 4)
    run = decoding_for(run, 141, started_seconds_ago=150)
    p = progress(run, now=run.phase_since + timedelta(seconds=141))
    assert p.batch.words == (
        "Batch 1 of 3: 4 products, decoding for 2 min 21 s "
        "(the first batch: its products show when all of it is written)"
    )
    assert p.eta_words == ""  # no rate yet: the page says when there will be one
    for user in (alice, bob):  # reviewers watch runs too (the page's clock runs on: 2 min 21 s or later)
        block = progress_block(client_for(user), run)
        assert re.search(r"Batch 1 of 3: 4 products, decoding for 2 min [2-5]\d s", block)
        assert '<dd id="run-eta">after the first batch</dd>' in block
    # a second later the line has moved: a person sees the worker is alive
    later = progress(run, now=run.phase_since + timedelta(seconds=142))
    assert "decoding for 2 min 22 s" in later.batch.words


def test_a_batch_running_long_turns_the_time_left_into_estimating(client_for, alice):
    # batches hold one schema's products: Shoes 3 + 3, Coffee 3 + 1
    run = do_start_run(RunRequest(decoder="ar", catalog=make_catalog(shoes=6, coffee=4), batch_size=3))[0]
    first = lease_batch(run.id, "w1", 3)
    record_results(run.id, "w1", [ItemOutcome(item.id, {}) for item in first])
    lease_batch(run.id, "w1", 3)
    # 3 products written in the 5 s before this batch began: a batch of 3 should take about 5 s
    run = decoding_for(run, 3, started_seconds_ago=8)
    p = progress(run, now=run.phase_since + timedelta(seconds=3))
    assert p.batch.words == "Batch 2 of 4: 3 products, decoding for 3 s (earlier batches took about 5 s)"
    assert not p.batch.runs_long and p.eta_words == "about 19 s"
    assert p.phase == "Decoding: 0.38 products/s, about 19 s left"  # 3 in 8 s, 7 to go

    # 30 s into a batch that should take 9: the rate of the earlier batches no longer tells
    run = decoding_for(run, 30, started_seconds_ago=39)
    p = progress(run, now=run.phase_since + timedelta(seconds=30))
    assert p.batch.runs_long and p.eta_seconds is None and p.eta_words == "estimating: this batch runs long"
    assert p.batch.words == (
        "Batch 2 of 4: 3 products, decoding for 30 s, longer than the about 9 s the earlier batches "
        "took; its products show when all of it is written"
    )
    assert p.phase.endswith(
        "this batch runs longer than the earlier ones, so the time left is re-estimated once it is written"
    )
    block = progress_block(client_for(alice), run)
    assert '<dd id="run-eta">estimating: this batch runs long</dd>' in block
    assert 'id="run-batch" class="small warn"' in block
    # negative control: a batch on time keeps a number
    run = decoding_for(run, 2, started_seconds_ago=7)
    assert progress(run, now=run.phase_since + timedelta(seconds=2)).eta_seconds is not None


def test_no_batch_line_between_batches_or_once_the_run_is_over(client_for, alice):
    run = do_start_run(RunRequest(decoder="hpd", catalog=make_catalog(shoes=2, coffee=0), batch_size=4))[0]
    items = lease_batch(run.id, "w1", 4)
    run = decoding_for(run, 5)
    assert progress(run).batch is not None
    set_phase(run.id, Run.Phase.WRITING)  # writing: the phase line says so, no batch timer
    run.refresh_from_db()
    assert progress(run).batch is None
    record_results(run.id, "w1", [ItemOutcome(item.id, {}) for item in items])
    run = decoding_for(run, 5)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and progress(run).batch is None
    assert 'id="run-batch"' not in progress_block(client_for(alice), run)
