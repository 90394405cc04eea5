"""`manage.py simulate_review`: a products file loaded as a new catalog, decoded by the shipped model
with HPD, and reviewed by a simulated reviewer through the product's own logic (real PostgreSQL,
Redis for the run's wake-up messages, the real model decoding and a real training job in the test's
process).

Decoding is what costs, so the module runs the command twice, once each, and its tests read what the
runs left: three products with no look allowed (the negative control), and 24 products reviewed to
the end with every step of the reviewer's day (20 labelled blind, auto-accept, the queue, one
training job). The bad files the command refuses are tested in test_simulate_review_refusals.py.
"""

import json
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings

from catalog.models import Catalog, Product
from extraction.engine.data import schemas
from extraction.engine.splits import DEFAULT_DATA
from extraction.models import ExtractedValue
from review.bootstrap import MIN_PRODUCTS
from review.models import APPROVED, BulkAction, GoldValue
from review.products_file import FileProduct, read_products
from training.models import TrainingJob

# Reading only: the module's fixture stores both runs once, each test's transaction is rolled back.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

DEV = DEFAULT_DATA / "oa-mine" / "dev.jsonl"
REVIEWED = MIN_PRODUCTS + 4  # the blind sample the product asks for before auto-accept, and 4 more
LEARN_EVERY = MIN_PRODUCTS + 1  # one job: once a product beyond the blind ones is reviewed (42 never come)


@dataclass(frozen=True)
class Simulated:
    path: Path
    catalog: Catalog
    curve: list[dict]
    summary: dict

    @property
    def products(self) -> dict[str, FileProduct]:
        return {p.sku: p for p in read_products(self.path)}

    def slots(self) -> set[tuple[int, str]]:
        """(product id, attribute) of every slot of the catalog, from its stored schemas."""
        return {
            (product.pk, name)
            for product in self.catalog.products.select_related("category")
            for name in product.category.current_schema.attributes.values_list("name", flat=True)
        }

    def events(self, name: str) -> list[dict]:
        return [point for point in self.curve if point.get("event") == name]


def products_file(folder: Path, count: int) -> Path:
    """The first `count` products of OA-Mine's dev file."""
    lines = DEV.read_text(encoding="utf-8").splitlines()[:count]
    path = folder / f"first-{count}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def simulate(path: Path, *args) -> Simulated:
    """A --json run with a curve point at every look: its catalog, the curve's points, the summary."""
    out = StringIO()
    call_command("simulate_review", str(path), "--json", "--every", "1", *args, stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    catalog = Catalog.objects.get(name__startswith=f"Simulated review of {path.name} ")
    return Simulated(path, catalog, lines[:-1], lines[-1])


@pytest.fixture(scope="module")
def runs(django_db_setup, django_db_blocker, tmp_path_factory):
    """Both runs, stored for the module's tests and flushed after them (as a transactional test's
    teardown does), wake-up messages included, so that no other module sees them."""
    folder = tmp_path_factory.mktemp("simulate_review")
    queue = redis.Redis.from_url(settings.REDIS_URL)
    queue.flushdb()
    with django_db_blocker.unblock():
        try:
            with override_settings(TRAINING_PUBLIC_DATA=[str(DEFAULT_DATA / "oa-mine")]):
                no_look = simulate(products_file(folder, 3), "--max-looks", "0")
                reviewed = simulate(
                    products_file(folder, REVIEWED),
                    "--target", "60",  # low, so that 20 blind labels offer a threshold
                    "--learn", "--learn-every", str(LEARN_EVERY),
                    "--learn-steps", "1", "--learn-batch-tokens", "128", "--learn-minutes", "1",
                )  # fmt: skip
        except BaseException:
            call_command("flush", interactive=False, verbosity=0)
            queue.flushdb()
            raise
    yield no_look, reviewed
    with django_db_blocker.unblock():
        call_command("flush", interactive=False, verbosity=0)
    queue.flushdb()


@pytest.fixture
def no_look(runs) -> Simulated:
    return runs[0]


@pytest.fixture
def reviewed(runs) -> Simulated:
    return runs[1]


def model_right_share(run: Simulated) -> float:
    """The share of the slots the first run's values get right, counted here from the values as
    stored (a review leaves a run's own value as it was)."""
    products, slots = run.products, run.slots()
    values = ExtractedValue.objects.filter(run_id=run.summary["runs"][0]).values_list(
        "product_id", "product__sku", "attribute__name", "value"
    )
    found = {(product_id, name): (sku, value) for product_id, sku, name, value in values}
    skus = dict(run.catalog.products.values_list("pk", "sku"))
    right = sum(products[skus[slot[0]]].is_right(slot[1], found.get(slot, (None, None))[1]) for slot in slots)
    return right / len(slots)


def expected_slots(path: Path) -> int:
    products = read_products(path)
    attributes = schemas(products)
    return sum(len(attributes[p.category]) for p in products)


def test_with_no_look_allowed_the_catalog_is_only_the_model_s_own(no_look):
    """Negative control: no look, no gold in the product, and the share right is the model's own."""
    summary = no_look.summary
    assert summary["products"] == 3 and summary["slots"] == expected_slots(no_look.path)
    assert summary["looks"] == 0 and all(point["looks"] == 0 for point in no_look.curve)
    assert not GoldValue.objects.filter(product__catalog=no_look.catalog).exists()
    assert not ExtractedValue.objects.filter(
        product__catalog=no_look.catalog, review__status__in=APPROVED
    ).exists()
    assert not no_look.catalog.products.exclude(known_values={}).exists()
    assert summary["right_share_final"] == pytest.approx(model_right_share(no_look), abs=1e-4)
    assert summary["right_share_final"] == summary["model_right_share"] < 1.0


def test_a_reviewer_who_reads_what_is_left_makes_every_slot_right_but_the_unlooked(reviewed):
    """After the blind labels and auto-accept, the queue worked to its end: every slot holds a
    person's value (the gold, as the file has it) or a value accepted in bulk, and only wrong ones
    of the latter stay wrong."""
    summary, products = reviewed.summary, reviewed.products
    slots = reviewed.slots()
    assert summary["products"] == REVIEWED and summary["slots"] == len(slots) == expected_slots(reviewed.path)
    assert summary["model_right_share"] < 1.0  # the reviewer had something to do
    gold = GoldValue.objects.filter(product__catalog=reviewed.catalog).values_list(
        "product__sku", "product_id", "attribute_name", "value", "provenance"
    )
    provenances = {provenance for *_, provenance in gold}
    assert "blind" in provenances and provenances <= {"blind", "accepted", "corrected"}
    assert all(products[sku].is_right(name, value) for sku, _, name, value, _ in gold)
    bulk = ExtractedValue.objects.filter(
        product__catalog=reviewed.catalog, events__action="bulk_accept", review__status="accepted"
    ).values_list("product_id", "attribute__name")
    assert {(product_id, name) for _, product_id, name, *_ in gold} | set(bulk) == slots
    # the queue's values left pending are those of slots a person labelled blind (passed over)
    pending = ExtractedValue.objects.filter(run_id=summary["runs"][-1], review__status="pending")
    blind = set(GoldValue.objects.filter(provenance="blind").values_list("product_id", "attribute_name"))
    assert set(pending.values_list("product_id", "attribute__name")) <= blind
    right = len(slots) - summary["wrong_accepted_unlooked"]
    assert summary["right_share_final"] == pytest.approx(right / len(slots), abs=1e-4)
    # the gold came in through the looks alone: the products carry only their text
    assert not Product.objects.exclude(known_values={}).exists()


def test_the_curve_and_its_summary_agree(reviewed):
    curve, summary = reviewed.curve, reviewed.summary
    looks = [point["looks"] for point in curve]
    assert looks == sorted(looks) and looks[0] == 0 and looks[-1] == summary["looks"]
    assert curve[0]["event"] == "extracted" and curve[-1]["event"] == "end"
    assert curve[0]["right_share"] == summary["model_right_share"]
    assert summary["model_right_share"] == pytest.approx(model_right_share(reviewed), abs=1e-4)
    assert curve[-1]["right_share"] == summary["right_share_final"]
    slots = summary["slots"]
    for level in (95, 98):  # the first point at the level; none where the curve stays below it
        reached = next(
            (p["looks"] for p in curve if round(p["right_share"] * slots) >= level / 100 * slots), None
        )
        assert summary[f"looks_to_{level}"] == reached
    # a slot costs one look to read and one more to type; blind labels are typed whole
    assert 0 < summary["looks"] <= 2 * summary["slots"]


def test_blind_labels_then_auto_accept_score_what_they_accept_unlooked(reviewed):
    """The 20 products the blind sample serves are typed whole, auto-accept (at a low target, so
    that 20 labels offer a threshold) accepts values in bulk, and the summary counts the wrong ones
    among them."""
    (blind,) = reviewed.events("blind_labelled")
    assert blind["products"] == MIN_PRODUCTS
    labelled = GoldValue.objects.filter(product__catalog=reviewed.catalog, provenance="blind")
    assert labelled.values("product").distinct().count() == MIN_PRODUCTS
    accepted = reviewed.events("auto_accept")
    assert accepted and sum(point["accepted"] for point in accepted) > 0
    assert BulkAction.objects.filter(action="accept", status="done").count() == len(accepted)
    # counted again here: bulk-accepted values of slots without a blind label, wrong by the gold
    products = reviewed.products
    labelled_slots = set(labelled.values_list("product_id", "attribute_name"))
    wrong = 0
    for value in ExtractedValue.objects.filter(
        product__catalog=reviewed.catalog, events__action="bulk_accept", review__status="accepted"
    ).select_related("product", "attribute"):
        if (value.product_id, value.attribute.name) not in labelled_slots:
            wrong += not products[value.product.sku].is_right(value.attribute.name, value.value)
    assert reviewed.summary["wrong_accepted_unlooked"] == wrong


def test_learning_trains_when_the_reviewed_products_grow(reviewed):
    """--learn: a real training job, cut to one step, once the reviewed products grew by --learn-every."""
    (trained,) = reviewed.events("training")
    assert trained["reviewed_products"] >= LEARN_EVERY
    job = TrainingJob.objects.get(pk=trained["job"])
    assert job.status == TrainingJob.Status.DONE and job.result is not None and job.max_steps == 1
    # 24 products hold back too few to give the gain an interval: the product's rule promotes nothing
    assert trained["promoted"] is False and len(reviewed.summary["runs"]) == 1
    assert not reviewed.events("new_run")
