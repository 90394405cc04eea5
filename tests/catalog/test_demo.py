"""The shipped demo catalog (OA-Mine) and the import benchmark command."""

import csv
import json
import re
from io import StringIO

from django.core.management import call_command

from catalog.kinds import MAX_TOKEN_BUDGET
from catalog.management.commands.load_demo_catalog import DEMO_CATALOG, DEMO_DIR
from catalog.models import Catalog, Category, ImportJob, Product


def test_it_loads_the_demo_catalog_idempotently(db):
    call_command("load_demo_catalog", stdout=StringIO())
    catalog = Catalog.objects.get(name=DEMO_CATALOG)
    rows = list(csv.DictReader((DEMO_DIR / "products.csv").open(encoding="utf-8")))
    assert 300 <= catalog.products.count() == len(rows) <= 1000
    assert Category.objects.count() == 10
    shoes = Category.objects.get(name="Shoes").current_schema
    assert [a.name for a in shoes.attributes.all()][:3] == ["Brand", "Model name", "Gender"]
    # sizes: the file's, grown where the model's training data or the products' values need more
    # (tests/catalog/test_fitting_budgets.py)
    assert all(a.description and 4 <= a.max_tokens <= MAX_TOKEN_BUDGET for a in shoes.attributes.all())
    product = Product.objects.get(sku=rows[0]["sku"])
    assert product.title == rows[0]["title"]
    assert product.known_values["Brand"] == rows[0]["Brand"]  # the gold value, kept for quality checks

    out = StringIO()
    call_command("load_demo_catalog", stdout=out)
    assert "0 new schema versions), 0 products created" in out.getvalue()
    assert Product.objects.count() == len(rows)
    # one version from the file, and at most one more sizing it to the products' values
    assert all(c.schema_versions.count() in (1, 2) for c in Category.objects.all())


def test_it_ships_schemas_whose_attributes_cover_the_gold_columns():
    schemas = json.loads((DEMO_DIR / "schemas.json").read_text(encoding="utf-8"))
    names = {a["name"] for s in schemas for a in s["attributes"]}
    header = next(csv.reader((DEMO_DIR / "products.csv").open(encoding="utf-8")))
    assert header[:3] == ["sku", "title", "category"]
    assert set(header[3:]) == names
    credit = " ".join((DEMO_DIR / "README.md").read_text(encoding="utf-8").split())
    assert "licensed under the **Apache License 2.0**" in credit


def test_every_demo_category_has_an_enumeration_and_a_boolean_whose_known_values_fit(db):
    err = StringIO()
    call_command("load_demo_catalog", stdout=StringIO(), stderr=err)
    assert err.getvalue() == ""  # no row skipped: every typed known value is one the type allows
    for category in Category.objects.all():
        kinds = {a.kind for a in category.current_schema.attributes.all()}
        assert {"enum", "boolean"} <= kinds, category.name
    shoes = Category.objects.get(name="Shoes").current_schema.attributes
    gender = shoes.get(name="Gender")
    assert gender.kind == "enum" and {"Men", "Women", "Unisex"} <= set(gender.allowed_values)
    assert shoes.get(name="Waterproof").kind == "boolean"
    typed = {
        category.pk: [a for a in category.current_schema.attributes.all() if a.kind in ("enum", "boolean")]
        for category in Category.objects.all()
    }
    for product in Product.objects.all():
        for attribute in typed[product.category_id]:
            allowed = attribute.allowed_values or ["yes", "no"]
            assert product.known_values.get(attribute.name, allowed[0]) in allowed, (
                product.sku,
                attribute.name,
            )
    coffee = Product.objects.filter(category__name="Coffee", title__icontains="decaf")
    assert {p.known_values.get("Decaffeinated") for p in coffee} == {"yes"}  # from the gold "Decaf"


def test_it_benchmarks_an_import_and_cleans_up(db):
    out = StringIO()
    call_command("bench_import", rows=3000, stdout=out)
    text = out.getvalue()
    assert re.search(
        r"first import \(all new\): 3,000 rows in .*\(created 3,000, updated 0, skipped 0\)", text
    )
    assert re.search(
        r"re-import \(all updates\): 3,000 rows in .*\(created 0, updated 3,000, skipped 0\)", text
    )
    assert re.search(r"^peak memory \(max RSS of this process\): \d+ MiB$", text, re.M)
    assert not Catalog.objects.filter(name="bench-import").exists()
    assert ImportJob.objects.count() == 0
