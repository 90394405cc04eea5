"""Load the demo catalog shipped in catalog/demo (OA-Mine, Apache-2.0). Safe to run again."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from catalog.imports.map import guess_mapping
from catalog.imports.read import inspect_file
from catalog.imports.write import import_file
from catalog.models import Catalog, Category
from catalog.schemas import do_fit_budgets, do_import_schema

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_CATALOG = "OA-Mine demo"
DEMO_DESCRIPTION = (
    "Real product titles from OA-Mine (Apache-2.0). Known values are the dataset's gold annotations, "
    "so extraction quality can be measured against them."
)


class Command(BaseCommand):
    help = "Create the demo categories, schemas and products (idempotent: re-running updates in place)."

    def handle(self, *args, **options):
        schemas = json.loads((DEMO_DIR / "schemas.json").read_text(encoding="utf-8"))
        new_versions = 0
        with transaction.atomic():
            for payload in schemas:
                _, created = do_import_schema(payload, user=None)
                new_versions += created
            catalog, _ = Catalog.objects.get_or_create(
                name=DEMO_CATALOG, defaults={"description": DEMO_DESCRIPTION}
            )
            path = DEMO_DIR / "products.csv"
            file_format = inspect_file(path, path.name)
            attribute_names = [a["name"] for payload in schemas for a in payload["attributes"]]
            mapping = guess_mapping(file_format.header, attribute_names)
            counts = import_file(path, file_format, mapping, catalog.pk)
            # the schemas were sized from the model's training data before the products came; now
            # their known values count too (the same rule a browser import applies)
            for category in Category.objects.filter(pk__in=counts.categories):
                new_versions += (
                    do_fit_budgets(category, None, "Sized to the demo products' values") is not None
                )
        if counts.skipped:
            self.stderr.write(f"{counts.skipped} demo rows were skipped: the demo files are inconsistent")
        self.stdout.write(
            f"Demo catalog {DEMO_CATALOG!r}: {len(schemas)} categories ({new_versions} new schema versions), "
            f"{counts.created} products created, {counts.updated} updated."
        )
