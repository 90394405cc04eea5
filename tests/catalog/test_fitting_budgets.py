"""Attributes start with the size their data needs (issue #47 point 6): a schema file's sizes grow to
what the model's training data and the catalog's known values need, a product import grows the
attributes its values outgrow (as a new schema version, said on the import's summary), and the demo
catalog loads with no attribute smaller than its data."""

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from catalog import budgets
from catalog.management.commands.load_demo_catalog import DEMO_DIR
from catalog.models import Category
from catalog.schemas import AttributeData, do_import_schema
from tests.support.catalog import import_inline, make_category

pytestmark = pytest.mark.django_db
LONG = "Blueberry Lemon Verbena with Chamomile and a Hint of Mint"


def sizes(category: Category) -> dict[str, int]:
    return {a.name: a.max_tokens for a in category.current_schema.attributes.all()}


def test_a_schema_file_gets_at_least_the_sizes_its_data_needs(client_for, alice):
    trained = budgets._trained(budgets._model_dir())
    payload = {
        "category": "Tea",
        "attributes": [
            {"name": "Brand", "max_tokens": 3},  # smaller than the training data's longest Brand
            {"name": "Flavor", "max_tokens": 60},  # a person's larger size stands
            {"name": "Caffeine free", "kind": "boolean", "max_tokens": 2},  # grows to what yes / no need
            {"name": "Never seen", "max_tokens": 5},  # nothing knows it (no data, no need): it stands
        ],
    }
    upload = SimpleUploadedFile("tea.json", json.dumps(payload).encode(), content_type="application/json")
    client_for(alice).post(reverse("catalog:schema_import"), {"file": upload})
    tea = Category.objects.get(name="Tea")
    assert trained["Brand"] > 3
    assert sizes(tea) == {
        "Brand": trained["Brand"],
        "Flavor": 60,
        "Caffeine free": budgets.LOW,
        "Never seen": 5,
    }
    page = client_for(alice).get(reverse("catalog:schema", args=[tea.pk])).content.decode()
    assert "may cut" not in page and 'id="resize-attributes"' not in page

    # the same file again says what the current version says: nothing new
    _, created = do_import_schema(payload, user=None)
    assert not created and tea.schema_versions.count() == 1
    # negative control: the file's own sizes, unfitted, would have cut Brand
    version, _ = do_import_schema({**payload, "category": "Raw tea"}, user=None, fit=False)
    assert {a.name: a.max_tokens for a in version.attributes.all()}["Brand"] == 3


def test_a_product_import_grows_the_attributes_its_values_outgrow_and_says_so(client_for, alice):
    tea = make_category("Tea", AttributeData("Flavor", max_tokens=4), AttributeData("Brand", max_tokens=6))
    # Brand's 6 tokens hold "Twinings" although the training data's longest Brand needs more: a size
    # a person chose stands until the catalog's own values need more
    assert (
        budgets.tokens_of("Twinings") + budgets.MARGIN <= 6 < budgets._trained(budgets._model_dir())["Brand"]
    )
    client = client_for(alice)
    job = import_inline(client, f"sku,title,category,flavor,brand\nT1,Some tea,Tea,{LONG},Twinings\n")
    wanted = budgets.tokens_of(LONG) + budgets.MARGIN
    assert wanted > 4 and sizes(tea) == {"Flavor": wanted, "Brand": 6}
    schema = tea.current_schema
    assert (
        schema.version == 2
        and schema.note == f"Sized to the values of import {job.pk}: Flavor 4 → {wanted} tokens"
    )
    assert schema.created_by == alice
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert (
        "Attributes grew to fit the imported values (a value longer than its slot is cut): "
        f"Tea v2: Flavor 4 → {wanted} tokens."
    ) in page

    # values that fit write no version
    job = import_inline(client, "sku,title,category,flavor\nT2,Other tea,Tea,Mint\n")
    assert tea.current_schema.version == 2 and job.message == ""


def test_the_demo_catalog_loads_with_every_attribute_as_large_as_its_data_needs():
    call_command("load_demo_catalog", stdout=StringIO())
    schemas = json.loads((DEMO_DIR / "schemas.json").read_text(encoding="utf-8"))
    too_small = [
        f"{category.name}: {a.name}"
        for category in Category.objects.all()
        for a in category.current_schema.attributes.all()
        if budgets.suggested_for(category, a).tokens > a.max_tokens
    ]
    assert too_small == []
    # negative control: the shipped file's own sizes would have cut some
    stated = {(s["category"], a["name"]): a["max_tokens"] for s in schemas for a in s["attributes"]}
    assert any(
        budgets.suggested_for(category, a).tokens > stated[(category.name, a.name)]
        for category in Category.objects.all()
        for a in category.current_schema.attributes.all()
    )
    versions = {c.name: c.current_schema.version for c in Category.objects.all()}
    out = StringIO()
    call_command("load_demo_catalog", stdout=out)
    assert "0 new schema versions" in out.getvalue()
    assert {c.name: c.current_schema.version for c in Category.objects.all()} == versions
