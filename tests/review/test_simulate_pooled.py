"""The simulated reviewer (review/simulation.py) and the pooled auto-accept: with `blind_most` it
labels the products the auto-accept page asks for before it could pool a threshold, then accepts on
the pool; asked for more than `blind_most`, it labels no more and nothing is accepted unlooked.
Real PostgreSQL; the run's values are written by the test (every value right, at 0.99) in place of
decoding, as a worker would write them."""

import json
import math
from pathlib import Path

import pytest

from extraction.engine.calibration import wilson
from extraction.models import ExtractedValue, Run
from review.bootstrap import MIN_PRODUCTS
from review.management.commands.simulate_review import simulated_user
from review.opening import open_reviews
from review.products_file import read_products
from review.simulated_catalog import load_catalog
from review.simulation import Hooks, Plan, Reviewer

pytestmark = pytest.mark.django_db

PRODUCTS = 100
ENOUGH = 95  # blind-labelled products whose 190 right values reach 98% pooled (189 would, 188 would not)


def products_file(tmp_path: Path) -> Path:
    path = tmp_path / "tea.jsonl"
    lines = [
        {
            "input": f"Brand{i} Flavor{i} tea",
            "category": "Tea",
            "target_scores": {"Brand": {f"Brand{i}": 1}, "Flavor": {f"Flavor{i}": 1}},
        }
        for i in range(PRODUCTS)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def right_at_099(products):
    """A decode hook: every value of the run the file's gold, at confidence 0.99."""
    by_sku = {p.sku: p for p in products}

    def decode(run: Run) -> Run:
        made = [
            ExtractedValue(
                run=run,
                product=item.product,
                attribute=attribute,
                raw_text=by_sku[item.product.sku].label(attribute.name),
                value=by_sku[item.product.sku].label(attribute.name),
                confidence=0.99,
            )
            for item in run.work_items.select_related("product", "schema")
            for attribute in item.schema.attributes.all()
        ]
        open_reviews(ExtractedValue.objects.bulk_create(made))
        run.work_items.update(status="done")
        Run.objects.filter(pk=run.pk).update(status=Run.Status.DONE, done=len(made))
        run.refresh_from_db()
        return run

    return decode


def work(tmp_path, blind_most):
    path = products_file(tmp_path)
    products = read_products(path)
    user = simulated_user()
    catalog = load_catalog(path, products, user)
    plan = Plan(blind_products=20, blind_most=blind_most, target=0.98, max_looks=10_000)
    return Reviewer(catalog, products, user, plan, Hooks(decode=right_at_099(products))).work()


def test_the_reviewer_labels_what_the_page_asks_then_accepts_on_the_pool(tmp_path):
    # 20 products: 40 right values pooled over Brand and Flavor, short of 98%; the page asks for
    # the products whose two values make the fewest all-right values that reach it, which the
    # reviewer labels, then accepts; the queue is then empty.
    fewest = next(m for m in range(MIN_PRODUCTS, 1000) if wilson(m, m)[0] >= 0.98)
    asked = math.ceil((fewest - 40) / 2)
    assert asked + 20 == ENOUGH
    outcome = work(tmp_path, blind_most=ENOUGH)
    events = [point.event for point in outcome.curve if point.event]
    labelled = [e["products"] for e in events if e["event"] == "blind_labelled"]
    assert labelled == [20, ENOUGH]
    accepted = [e for e in events if e["event"] == "auto_accept"]
    # every pending value at 0.99: the labelled products' too (a blind label reviews no run value)
    assert {(e["attribute"], e["threshold"], e["accepted"]) for e in accepted} == {
        ("Brand", 0.99, PRODUCTS),
        ("Flavor", 0.99, PRODUCTS),
    }
    assert outcome.wrong_accepted_unlooked == 0
    # the blind labels cost one look and one to type each: 2 values a product
    assert outcome.looks == ENOUGH * 2 * 2 and outcome.right_share_final == 1.0


def test_asked_for_more_than_blind_most_the_reviewer_stops_and_nothing_is_accepted_unlooked(tmp_path):
    outcome = work(tmp_path, blind_most=ENOUGH - 1)
    events = [point.event for point in outcome.curve if point.event]
    assert [e["products"] for e in events if e["event"] == "blind_labelled"] == [20]
    assert not [e for e in events if e["event"] == "auto_accept"]
    # the queue reads the other 80 products' values, each right: one look each
    assert outcome.looks == 20 * 2 * 2 + 80 * 2 and outcome.right_share_final == 1.0
