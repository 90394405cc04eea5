"""Migrations review 0003 and extraction 0005: each value's review state moves from extraction's
ExtractedValue into review's ValueReview, and back again when they are undone."""

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from tests.support.migrations import back_to_latest, migrate  # noqa: F401 - back_to_latest is a fixture

BEFORE = {"review": "0002_gold_provenance", "extraction": "0004_run_incidents_queue_index"}
AFTER = {"review": "0003_value_review", "extraction": "0005_review_state_moved_to_review"}
STATE = ("status", "reviewed_value", "reviewed_by_id", "reviewed_at", "version")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_review_state_moves_to_value_review_and_back():
    apps = migrate(**BEFORE)
    Category, Schema = apps.get_model("catalog", "Category"), apps.get_model("catalog", "SchemaVersion")
    Attribute, Product = apps.get_model("catalog", "Attribute"), apps.get_model("catalog", "Product")
    Run, Value = apps.get_model("extraction", "Run"), apps.get_model("extraction", "ExtractedValue")
    reviewer = User.objects.create(username="bob")
    category = Category.objects.create(name="Mugs")
    schema = Schema.objects.create(category=category, version=1)
    attrs = [Attribute.objects.create(schema=schema, name=n, position=i) for i, n in enumerate("ABC")]
    product = Product.objects.create(
        catalog=apps.get_model("catalog", "Catalog").objects.create(name="Old"),
        category=category,
        sku="M1",
        title="A mug",
    )
    run = Run.objects.create(decoder="hpd", model_dir="m")
    at = timezone.now()
    made = {
        "pending": dict(value="red", confidence=0.25),
        "corrected": dict(
            value="blue",
            confidence=0.5,
            review_status="corrected",
            reviewed_value="navy",
            reviewed_by_id=reviewer.pk,
            reviewed_at=at,
            version=3,
        ),
        "rejected": dict(
            value="big", confidence=0.75, review_status="rejected", reviewed_by_id=reviewer.pk, version=1
        ),
    }
    ids = {
        name: Value.objects.create(run=run, product=product, attribute=attribute, **fields).pk
        for (name, fields), attribute in zip(made.items(), attrs, strict=True)
    }
    expected = {
        ids["pending"]: (run.pk, 0.25, "pending", "", None, None, 0),
        ids["corrected"]: (run.pk, 0.5, "corrected", "navy", reviewer.pk, at, 3),
        ids["rejected"]: (run.pk, 0.75, "rejected", "", reviewer.pk, None, 1),
    }

    apps = migrate(**AFTER)
    Review = apps.get_model("review", "ValueReview")
    moved = {
        row[0]: row[1:] for row in Review.objects.values_list("value_id", "run_id", "confidence", *STATE)
    }
    assert moved == expected
    value_fields = {f.name for f in apps.get_model("extraction", "ExtractedValue")._meta.get_fields()}
    assert value_fields.isdisjoint(
        {"review_status", "reviewed_value", "reviewed_by", "reviewed_at", "version"}
    )

    apps = migrate(**BEFORE)
    Value = apps.get_model("extraction", "ExtractedValue")
    back = {
        row[0]: row[1:]
        for row in Value.objects.values_list(
            "pk",
            "run_id",
            "confidence",
            "review_status",
            "reviewed_value",
            "reviewed_by_id",
            "reviewed_at",
            "version",
        )
    }
    assert back == expected
