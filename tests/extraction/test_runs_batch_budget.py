"""A worker leases products while their decoding fits its memory budget, and a dead worker's products
one at a time (issue 51, point 2): PostgreSQL's side of it, with the default model's tokenizer and
shape, and no worker process."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from catalog.models import Product
from extraction.models import Run, WorkItem
from extraction.services import RunRequest, do_start_run
from runner import decoding
from runner.budget import MB, BatchBudget
from runner.leases import lease_batch, release_expired_leases
from tests.support.runs_catalog import make_catalog

pytestmark = pytest.mark.django_db

LONG = "SH-0002"


@pytest.fixture(scope="module")
def extractor():
    """The default model, as a worker loads it (`make test` builds it first)."""
    return decoding.extractor_for("", "cpu")


def long_description(chunks: int) -> str:
    return " ".join(f"word{i} suede leather sole" for i in range(chunks))


def start_run(stack: int = 4) -> Run:
    catalog = make_catalog(shoes=6, coffee=0)
    Product.objects.filter(sku=LONG).update(description=long_description(250))
    return do_start_run(RunRequest(decoder="hpd", catalog=catalog, batch_size=16, stack=stack))[0]


def budget_of(extractor, run: Run) -> BatchBudget:
    return BatchBudget(extractor, decoding.attribute_specs, run.decoder, run.decode_settings["stack"])


def leased_batches(run: Run, budget: BatchBudget) -> list[list[str]]:
    batches = []
    while items := lease_batch(run.id, "w1", 16, fits=budget.fits):
        batches.append([item.product.sku for item in items])
    return batches


def item(run: Run, sku: str) -> WorkItem:
    return WorkItem.objects.select_related("product").get(run=run, product__sku=sku)


@pytest.mark.parametrize("share", [1.0, 0.5], ids=["the-long-one-fits-alone", "not-even-alone"])
def test_a_long_product_is_leased_alone_and_the_others_in_batches_that_fit(extractor, settings, share):
    run = start_run()
    budget = budget_of(extractor, run)
    long_alone = budget.batch_bytes([item(run, LONG)])
    # The budget holds the long product alone (or not even that): any company for it is too much,
    # while the five short ones would fit in one batch.
    settings.EXTRACTION_MEMORY_BUDGET_MB = int(long_alone * share) // MB
    budget = budget_of(extractor, run)
    shorts = [item(run, f"SH-{i:04d}") for i in (0, 1, 3, 4, 5)]
    assert budget.positions(item(run, LONG)) > 1500 > 10 * max(map(budget.positions, shorts))
    assert budget.fits(shorts) and not budget.fits([shorts[0], item(run, LONG)])
    assert leased_batches(run, budget) == [["SH-0000", "SH-0001"], [LONG], ["SH-0003", "SH-0004", "SH-0005"]]


def test_the_default_budget_leases_a_whole_batch_of_short_products(extractor):
    run = start_run()
    Product.objects.filter(sku=LONG).update(description="")
    assert settings.EXTRACTION_MEMORY_BUDGET_MB >= 1024  # half of any machine that runs the model
    assert [len(batch) for batch in leased_batches(run, budget_of(extractor, run))] == [6]


def test_stacking_long_products_costs_more_than_decoding_them_one_to_a_row(extractor):
    run = start_run(stack=4)
    stacked = budget_of(extractor, run)
    unstacked = BatchBudget(extractor, decoding.attribute_specs, run.decoder, 1)
    pair = [item(run, LONG), item(run, "SH-0000")]
    # one row of both holds about four times the attention scores of the long one's row
    assert stacked.batch_bytes(pair) > 1.5 * unstacked.batch_bytes([item(run, LONG)])
    assert 1.5 * unstacked.batch_bytes([item(run, LONG)]) > unstacked.batch_bytes(pair)


@pytest.mark.parametrize("how", ["expired", "released by the reaper"])
def test_a_dead_workers_products_are_leased_one_at_a_time(extractor, how):
    run = start_run()
    Product.objects.filter(sku=LONG).update(description="")
    budget = budget_of(extractor, run)
    lost = lease_batch(run.id, "w1", 4, fits=budget.fits)
    assert len(lost) == 4
    WorkItem.objects.filter(id__in=[i.id for i in lost]).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    if how == "released by the reaper":
        assert release_expired_leases() == 4
    # each of the dead worker's products alone (the one that killed it then dies alone), then the rest
    assert leased_batches(run, budget) == [
        ["SH-0000"],
        ["SH-0001"],
        ["SH-0002"],
        ["SH-0003"],
        ["SH-0004", "SH-0005"],
    ]
    assert dict(WorkItem.objects.filter(run=run).values_list("product__sku", "attempts")) == {
        "SH-0000": 2,
        "SH-0001": 2,
        "SH-0002": 2,
        "SH-0003": 2,
        "SH-0004": 1,
        "SH-0005": 1,
    }
