"""`manage.py simulate_review`: a products file loaded as a new catalog, decoded by the shipped model
with HPD, and reviewed by a simulated reviewer through the product's own logic (real PostgreSQL,
Redis for the run's wake-up messages, the real model decoding in the test's process)."""

import json
from io import StringIO
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.core.management import CommandError, call_command

from catalog.models import Catalog, Product
from extraction.engine.splits import DEFAULT_DATA
from extraction.models import ExtractedValue
from review.models import APPROVED, BulkAction, GoldValue
from review.products_file import read_products, schemas_of
from tests.support.bad_input import changes_between, stored_state
from training.models import TrainingJob

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DEV = DEFAULT_DATA / "oa-mine" / "dev.jsonl"


@pytest.fixture(autouse=True)
def empty_queue():
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


def products_file(tmp_path: Path, count: int) -> Path:
    """The first `count` products of OA-Mine's dev file (several categories among them)."""
    lines = DEV.read_text(encoding="utf-8").splitlines()[:count]
    path = tmp_path / f"first-{count}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def simulate(path: Path, *args) -> tuple[list[dict], dict]:
    """(the curve's points, the summary) of a --json run."""
    out = StringIO()
    call_command("simulate_review", str(path), "--json", "--every", "1", *args, stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return lines[:-1], lines[-1]


def expected_slots(path: Path) -> int:
    products = read_products(path)
    schemas = schemas_of(products)
    return sum(len(schemas[p.category]) for p in products)


def model_right_share(path: Path) -> float:
    """The share of the slots the run's values get right, counted here from the values as stored."""
    by_sku = {p.sku: p for p in read_products(path)}
    right = 0
    for product in Product.objects.select_related("category"):
        truth = by_sku[product.sku]
        values = dict(ExtractedValue.objects.filter(product=product).values_list("attribute__name", "value"))
        for name in product.category.current_schema.attributes.values_list("name", flat=True):
            right += truth.is_right(name, values.get(name))
    return right / expected_slots(path)


def test_a_reviewer_who_reads_everything_makes_the_catalog_right(tmp_path):
    path = products_file(tmp_path, 12)
    curve, summary = simulate(path, "--blind", "0")

    looks = [point["looks"] for point in curve]
    assert looks == sorted(looks) and looks[0] == 0  # the curve is monotone in looks
    assert summary["products"] == 12 and summary["slots"] == expected_slots(path)
    assert summary["right_share_final"] == 1.0 and curve[-1]["right_share"] == 1.0
    assert summary["looks_to_95"] is not None and summary["looks_to_98"] is not None
    assert summary["looks_to_95"] <= summary["looks_to_98"] <= summary["looks"]
    # every slot was read once (accept or n/a: one look; a correction: two)
    assert summary["slots"] <= summary["looks"] <= 2 * summary["slots"]
    assert summary["wrong_accepted_unlooked"] == 0
    # every value was reviewed by hand, so each slot has gold made from a look
    assert GoldValue.objects.count() == summary["slots"]
    assert ExtractedValue.objects.filter(review__status__in=APPROVED).count() == summary["slots"]
    # the catalog's products carry only their text: the gold came in through the looks alone
    assert not Product.objects.exclude(known_values={}).exists()


def test_with_no_look_allowed_the_catalog_is_only_the_model_s_own(tmp_path):
    """Negative control: no look, no gold in the product, and the share right is the model's own."""
    path = products_file(tmp_path, 12)
    curve, summary = simulate(path, "--max-looks", "0")

    assert summary["looks"] == 0 and all(point["looks"] == 0 for point in curve)
    assert not GoldValue.objects.exists()
    assert not ExtractedValue.objects.filter(review__status__in=APPROVED).exists()
    assert not Product.objects.exclude(known_values={}).exists()
    assert summary["right_share_final"] == pytest.approx(model_right_share(path), abs=1e-4)
    assert summary["right_share_final"] == summary["model_right_share"] < 1.0


def test_blind_labels_then_auto_accept_score_what_they_accept_unlooked(tmp_path):
    """24 products: the 20 the blind sample serves are typed whole, auto-accept (at a low target,
    so that 20 labels offer a threshold) accepts values in bulk, and the summary counts the wrong
    ones among them."""
    path = products_file(tmp_path, 24)
    curve, summary = simulate(path, "--target", "60", "--max-looks", "400")

    blind = next(point for point in curve if point.get("event") == "blind_labelled")
    assert blind["products"] == 20
    assert GoldValue.objects.filter(provenance="blind").values("product").distinct().count() == 20
    accepted = [point for point in curve if point.get("event") == "auto_accept"]
    assert accepted and sum(point["accepted"] for point in accepted) > 0
    assert BulkAction.objects.filter(action="accept", status="done").count() == len(accepted)
    # counted again here: bulk-accepted values of slots without a blind label, wrong by the gold
    by_sku = {p.sku: p for p in read_products(path)}
    labelled = set(GoldValue.objects.filter(provenance="blind").values_list("product_id", "attribute_name"))
    wrong = 0
    for value in ExtractedValue.objects.filter(
        events__action="bulk_accept", review__status="accepted"
    ).select_related("product", "attribute"):
        if (value.product_id, value.attribute.name) not in labelled:
            wrong += not by_sku[value.product.sku].is_right(value.attribute.name, value.value)
    assert summary["wrong_accepted_unlooked"] == wrong
    looks = [point["looks"] for point in curve]
    assert looks == sorted(looks) and summary["looks"] <= 400


def test_learning_trains_when_the_reviewed_products_grow(tmp_path, settings):
    """--learn: a real training job, cut small, once the reviewed products grew by --learn-every."""
    settings.TRAINING_PUBLIC_DATA = [str(DEFAULT_DATA / "oa-mine")]
    path = products_file(tmp_path, 12)
    curve, summary = simulate(
        path,
        "--blind", "0", "--max-looks", "45", "--learn", "--learn-every", "4",
        "--learn-steps", "2", "--learn-batch-tokens", "128", "--learn-minutes", "1",
    )  # fmt: skip

    trained = [point for point in curve if point.get("event") == "training"]
    assert trained and trained[0]["reviewed_products"] >= 4
    job = TrainingJob.objects.get(pk=trained[0]["job"])
    assert job.status == TrainingJob.Status.DONE and job.result is not None
    # 12 products hold back too few to give the gain an interval: the product's rule promotes nothing
    assert trained[0]["promoted"] is False and len(summary["runs"]) == 1


@pytest.mark.parametrize(
    "content, where",
    [
        ('{"input": "A shoe", "category": "Shoes", "target_scores": {}}\nnot json\n', "line 2"),
        (
            '{"input": "A shoe", "category": "Shoes", "target_scores": {"Brand": {"A": 1}}}\n{"input": "B"}\n',
            "line 2",
        ),
        ('{"input": "", "category": "Shoes", "target_scores": {"Brand": {"A": 1}}}\n', "line 1"),
        ('\n\n{"input": "A", "category": "Shoes", "target_scores": {"Brand": "A"}}\n', "line 3"),
        (
            '{"input": "' + "x" * 1200 + '", "category": "Shoes", "target_scores": {"Brand": {"x": 1}}}\n',
            "line 1",
        ),
        ("", "holds no product"),
    ],
)
def test_a_bad_file_is_refused_naming_its_line_and_nothing_is_stored(tmp_path, content, where):
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    before = stored_state()
    with pytest.raises(CommandError) as refused:
        call_command("simulate_review", str(path), "--json", stdout=StringIO())
    assert str(path) in str(refused.value) and where in str(refused.value)
    assert changes_between(before, stored_state()) == 0
    assert not Catalog.objects.exists()


def test_a_missing_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "nowhere.jsonl"
    with pytest.raises(CommandError, match=f"{path}: no such file"):
        call_command("simulate_review", str(path), stdout=StringIO())
    assert not Catalog.objects.exists()
