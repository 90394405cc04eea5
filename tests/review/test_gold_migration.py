"""Migration review 0002: gold made before provenance existed gets what its review events imply."""

import pytest

from tests.support.migrations import back_to_latest, migrate  # noqa: F401 - back_to_latest is a fixture

# extraction 0005 needs review 0003, so extraction stays where review 0001 and 0002 found it
BEFORE = {"review": "0001_initial", "extraction": "0004_run_incidents_queue_index"}
AFTER = {"review": "0002_gold_provenance", "extraction": "0004_run_incidents_queue_index"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_existing_gold_gets_the_provenance_its_review_events_imply():
    apps = migrate(**BEFORE)
    Catalog, Category = apps.get_model("catalog", "Catalog"), apps.get_model("catalog", "Category")
    Schema, Attribute = apps.get_model("catalog", "SchemaVersion"), apps.get_model("catalog", "Attribute")
    Product, Run = apps.get_model("catalog", "Product"), apps.get_model("extraction", "Run")
    Value, Event = apps.get_model("extraction", "ExtractedValue"), apps.get_model("review", "ValueEvent")
    Gold = apps.get_model("review", "GoldValue")
    category = Category.objects.create(name="Mugs")
    schema = Schema.objects.create(category=category, version=1)
    names = ("Brand", "Color", "Size", "Shape")
    attrs = [Attribute.objects.create(schema=schema, name=n, position=i) for i, n in enumerate(names)]
    product = Product.objects.create(
        catalog=Catalog.objects.create(name="Old"),
        category=category,
        sku="M1",
        title="A mug",
        known_values={"Size": "large"},
    )
    run = Run.objects.create(decoder="hpd", model_dir="m")

    def reviewed(attribute, model_value, action, new_status, gold_value):
        value = Value.objects.create(
            run=run, product=product, attribute=attribute, value=model_value, review_status=new_status
        )
        Event.objects.create(
            value=value, run=run, action=action, old_status="pending", new_status=new_status, version_after=1
        )
        Gold.objects.create(
            product=product, attribute_name=attribute.name, schema=schema, value=gold_value, source=value
        )

    reviewed(attrs[0], "Acme", "bulk_accept", "accepted", "Acme")
    reviewed(attrs[1], "red", "correct", "corrected", "blue")
    Gold.objects.create(product=product, attribute_name="Size", schema=schema, value="large")  # seeded
    Gold.objects.create(product=product, attribute_name="Shape", schema=schema, value="round")  # run deleted

    apps = migrate(**AFTER)
    rows = apps.get_model("review", "GoldValue").objects.values_list(
        "attribute_name", "provenance", "from_run_id"
    )
    assert set(rows) == {
        ("Brand", "accepted", run.pk),
        ("Color", "corrected", run.pk),
        ("Size", "catalog", None),
        ("Shape", "accepted", None),
    }
