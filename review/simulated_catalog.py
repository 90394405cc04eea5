"""A products file (review/products_file.py) loaded as a new catalog, through the product's own doors:
each category's schema imported as an admin imports one (catalog/schemas.py), sized by the budget rule
(catalog/budgets.py) from the longest value the catalog will hold, and the products written by the CSV
import's writer (catalog/imports/write.py), all in one transaction.

Only the text and the category reach the products: no known values, since the catalog's gold must
reach the product through the reviewer's looks alone (the file's values size the slots, as a team
sizes its schema for the values it expects, and nothing more).
"""

import csv
import tempfile
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from catalog import budgets
from catalog.imports.map import guess_mapping
from catalog.imports.read import inspect_file
from catalog.imports.write import import_file
from catalog.models import Catalog
from catalog.schemas import AttributeData, do_import_schema
from extraction.engine import metric
from extraction.engine.data import schemas
from review.products_file import FileProduct, ProductsFileError

HEADER = ["sku", "title", "description", "category"]


def longest_value(products: list[FileProduct], category: str, attribute: str) -> str | None:
    """The value of `attribute` in `category` that takes the most tokens (None: only n/a)."""
    forms = [
        form.strip()
        for p in products
        if p.category == category
        for form in p.gold.get(attribute, [])
        if not metric.is_na(form)
    ]
    return max(forms, key=budgets.tokens_of) if forms else None


def category_name(path: Path, category: str) -> str:
    """The file's category under a name of the file's own ("oa-mine/dev.jsonl Shoes"), as
    `manage.py learning_curve` names its: no other catalog's category gets a new schema version."""
    return f"{path.parent.name}/{path.name} {category}"


def schema_payloads(path: Path, products: list[FileProduct]) -> list[dict]:
    """One exported-schema object per category (catalog/schemas.py's format), each attribute a text
    copied from the product's text, sized as an attribute added without a size is (budgets.suggested)
    with the file's longest value as the known one. The import's own fitting (schemas.fitted) then
    finds nothing to grow: it reads known values from the stored products, which hold none here."""
    payloads = []
    for category, names in schemas(products).items():
        if not names:
            raise ProductsFileError(
                f"{path}: no record of category {category!r} lists any attribute, so nothing to extract"
            )
        attributes = [
            AttributeData(
                name=name,
                max_tokens=budgets.suggested_from(name, longest_value(products, category, name)).tokens,
            )
            for name in names
        ]
        payloads.append(
            {"category": category_name(path, category), "attributes": [vars(a) for a in attributes]}
        )
    return payloads


def catalog_name(path: Path) -> str:
    return f"Simulated review of {path.name} ({timezone.now():%Y-%m-%d %H:%M:%S.%f})"


def _write_csv(path: Path, products: list[FileProduct], out: Path) -> None:
    with out.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        for p in products:
            writer.writerow([p.sku, p.title, p.description, category_name(path, p.category)])


def load_catalog(path: Path, products: list[FileProduct], user=None) -> Catalog:
    """A new catalog holding `products` under their categories' schemas, all or nothing: a row the
    import refuses raises ProductsFileError naming its line in `path`, and nothing is stored."""
    payloads = schema_payloads(path, products)
    with tempfile.TemporaryDirectory(prefix="slotwise-simulate-") as scratch:
        csv_path = Path(scratch) / "products.csv"
        _write_csv(path, products, csv_path)
        with transaction.atomic():
            for payload in payloads:
                do_import_schema(payload, user, note=f"Imported by simulate_review from {path}")
            catalog = Catalog.objects.create(
                name=catalog_name(path),
                description=f"Loaded from {path} by simulate_review.",
                created_by=user,
            )
            refused = []
            file_format = inspect_file(csv_path, csv_path.name)
            mapping = guess_mapping(file_format.header, [])
            import_file(
                csv_path, file_format, mapping, catalog.pk, on_errors=lambda errors, _: refused.extend(errors)
            )
            if refused:
                first = refused[0]
                line = products[first.row - 2].line  # the CSV's header is its row 1
                raise ProductsFileError(
                    f"{path}, line {line}: the catalog import refused it ({first.column}: {first.reason}); "
                    f"{len(refused)} refusal(s) in all, nothing was stored"
                )
    return catalog
