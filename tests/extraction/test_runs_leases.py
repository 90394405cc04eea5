"""Starting runs, leasing their work and recording results: the PostgreSQL side of workers."""

import threading
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from catalog.models import Category, Product
from extraction.models import ExtractedValue, Run, WorkItem
from extraction.progress import progress
from extraction.services import RunRefused, RunRequest, do_cancel_run, do_start_run
from runner.leases import (
    ItemOutcome,
    lease_batch,
    record_results,
    renew_leases,
    why_nothing_to_lease,
)
from tests.support.runs_catalog import make_catalog


@dataclass
class Value:
    text: str
    confidence: float = 0.9
    steps: int = 2
    truncated: bool = False


def values_for(item: WorkItem, text: str = "Acme") -> ItemOutcome:
    names = item.schema.attributes.values_list("name", flat=True)
    return ItemOutcome(item.id, values={name: Value(text) for name in names})


@pytest.fixture
def catalog(db):
    return make_catalog(shoes=6, coffee=4)


def start(catalog, decoder="hpd", **kwargs) -> Run:
    return do_start_run(RunRequest(decoder=decoder, catalog=catalog, batch_size=4, **kwargs))[0]


def test_it_queues_one_item_per_product_with_its_category_schema(catalog):
    run = start(catalog)
    assert run.total == 10
    items = WorkItem.objects.filter(run=run)
    assert items.count() == 10
    assert set(items.values_list("status", flat=True)) == {WorkItem.Status.QUEUED}
    for item in items.select_related("product__category", "schema"):
        assert item.schema == item.product.category.current_schema
    assert run.schema_versions.count() == 2


def test_it_selects_by_category_and_search(catalog):
    shoes = Category.objects.get(name="Shoes")
    run = start(catalog, category=shoes, search="leather")
    titles = set(WorkItem.objects.filter(run=run).values_list("product__title", flat=True))
    assert titles and all("leather" in t and "Coffee" not in t for t in titles)
    assert run.total == Product.objects.filter(category=shoes, title__icontains="leather").count()


def test_it_refuses_a_category_without_schema_and_stores_nothing(catalog):
    bare = Category.objects.create(name="Garden")
    Product.objects.create(catalog=catalog, sku="G-1", title="Hose 20 m", category=bare)
    with pytest.raises(RunRefused, match="'Garden' \\(1 products\\)"):
        start(catalog)
    assert not Run.objects.exists() and not WorkItem.objects.exists()


def test_it_refuses_an_empty_selection(catalog):
    with pytest.raises(RunRefused, match="No product matches"):
        start(catalog, search="no such product anywhere")
    assert not Run.objects.exists()


def test_it_links_an_hpd_and_an_ar_run_for_both(catalog):
    hpd, ar = do_start_run(RunRequest(decoder="both", catalog=catalog))
    assert (hpd.decoder, ar.decoder) == ("hpd", "ar")
    assert hpd.linked_run == ar and ar.linked_run == hpd
    assert set(WorkItem.objects.filter(run=hpd).values_list("product", flat=True)) == set(
        WorkItem.objects.filter(run=ar).values_list("product", flat=True)
    )


def test_it_leases_one_schema_per_batch_and_never_the_same_item_twice(catalog):
    run = start(catalog)
    first = lease_batch(run.id, "w1", 8)
    second = lease_batch(run.id, "w2", 8)
    assert len({item.schema_id for item in first}) == 1 and len({item.schema_id for item in second}) == 1
    assert not {i.id for i in first} & {i.id for i in second}
    assert len(first) + len(second) == 10  # 6 shoes, then 4 coffees
    assert lease_batch(run.id, "w3", 8) == []
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.started_at


@pytest.mark.django_db(transaction=True)
def test_it_skips_items_another_transaction_has_locked():
    run = start(make_catalog(shoes=6, coffee=0))
    with transaction.atomic():
        locked = list(WorkItem.objects.select_for_update().filter(run=run).order_by("id")[:2])
        taken = []

        def other_worker():
            try:
                taken.extend(lease_batch(run.id, "w2", 10))
            finally:
                connection.close()

        thread = threading.Thread(target=other_worker)
        thread.start()
        thread.join(timeout=10)
        assert not thread.is_alive(), "leasing waited on a locked row instead of skipping it"
    assert len(taken) == 4
    assert not {i.id for i in locked} & {i.id for i in taken}


def test_it_takes_an_expired_lease_again_and_refuses_the_old_owners_results(catalog):
    run = start(catalog)
    lost = lease_batch(run.id, "dead-worker", 4)
    WorkItem.objects.filter(id__in=[i.id for i in lost]).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    retaken = [item for _ in lost for item in lease_batch(run.id, "w2", 4)]  # after a death, one at a time
    assert [i.id for i in retaken] == [i.id for i in lost]
    assert all(i.attempts == 2 for i in retaken)
    assert record_results(run.id, "dead-worker", [values_for(i, "stale") for i in lost]) == 0
    assert not ExtractedValue.objects.filter(run=run).exists()
    assert record_results(run.id, "w2", [values_for(i, "fresh") for i in retaken]) == 4
    assert set(ExtractedValue.objects.filter(run=run).values_list("value", flat=True)) == {"fresh"}


def test_it_overwrites_a_value_on_retry_and_never_duplicates(catalog):
    run = start(catalog, search="Clarks")
    (item,) = lease_batch(run.id, "w1", 4)
    ExtractedValue.objects.create(
        run=run, product=item.product, attribute=item.schema.attributes.get(name="Brand"), raw_text="old"
    )
    record_results(run.id, "w1", [values_for(item, "  Clarks  ")])
    rows = ExtractedValue.objects.filter(run=run, product=item.product)
    assert rows.count() == 2  # Brand and Color, once each
    brand = rows.get(attribute__name="Brand")
    assert (brand.raw_text, brand.value) == ("  Clarks  ", "Clarks")


def test_it_normalizes_numbers_to_the_attribute_unit(catalog):
    run = start(catalog, search="Illy")
    (item,) = lease_batch(run.id, "w1", 4)
    record_results(run.id, "w1", [ItemOutcome(item.id, {"Brand": Value("Illy"), "Weight": Value("0,25 kg")})])
    assert ExtractedValue.objects.get(run=run, attribute__name="Weight").value == "250 g"


def test_it_finishes_the_run_with_counts_when_every_item_is_recorded(catalog):
    run = start(catalog)
    while items := lease_batch(run.id, "w1", 4):
        outcomes = [values_for(i) for i in items]
        outcomes[0] = ItemOutcome(items[0].id, error="RuntimeError: boom")
        record_results(run.id, "w1", outcomes)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and run.finished_at
    assert (run.done, run.failed) == (7, 3)
    assert WorkItem.objects.filter(run=run, status="failed", error="RuntimeError: boom").count() == 3
    assert set(WorkItem.objects.filter(run=run, status="done").values_list("writes", flat=True)) == {1}
    assert ExtractedValue.objects.filter(run=run).count() == 7 * 2
    assert progress(run).percent == 70.0  # the bar is the share done, as "7 / 10" beside it says
    assert why_nothing_to_lease(run.id).over


def test_it_cancels_queued_work_and_lets_the_leased_batch_finish(catalog):
    run = start(catalog)
    leased = lease_batch(run.id, "w1", 4)
    do_cancel_run(run.id)
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.finished_at is None
    assert WorkItem.objects.filter(run=run, status="cancelled").count() == 6
    assert lease_batch(run.id, "w2", 4) == []
    record_results(run.id, "w1", [values_for(i) for i in leased])
    run.refresh_from_db()
    assert run.finished_at and run.done == 4
    assert progress(run).cancelled == 6


def test_only_the_owner_renews_a_lease(catalog):
    run = start(catalog)
    items = lease_batch(run.id, "w1", 4, lease_seconds=5)
    ids = [i.id for i in items]
    before = dict(WorkItem.objects.filter(id__in=ids).values_list("id", "lease_expires_at"))
    assert renew_leases(ids, "intruder", 600) == 0
    assert renew_leases(ids, "w1", 600) == 4
    after = dict(WorkItem.objects.filter(id__in=ids).values_list("id", "lease_expires_at"))
    assert all(after[i] - before[i] > timedelta(seconds=500) for i in ids)
