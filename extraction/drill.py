"""Pieces of the fault drill and the run benchmark: a synthetic catalog, Redis and PostgreSQL restarts, the tally."""

import itertools
import os
import subprocess
import sys
from dataclasses import asdict, dataclass
from urllib.parse import urlparse

from django.conf import settings
from django.db import transaction
from django.db.models import Count

from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion
from extraction.models import ExtractedValue, Run, WorkItem

DRILL_CATEGORY = "Drill sneakers"
DRILL_ATTRIBUTES = [("Brand", "the maker", 6), ("Color", "main colour", 4), ("Size", "shoe size", 4)]
_BRANDS = ["Nike", "Adidas", "Puma", "Vans", "Asics", "Reebok", "Clarks", "Diesel", "Converse", "Saucony"]
_MODELS = ["Air Zoom", "Samba OG", "Suede Classic", "Old Skool", "Gel Kayano", "Club C", "Desert Boot"]
_COLORS = ["black", "white", "blue", "red", "grey", "green", "beige", "navy"]
_MATERIALS = ["leather", "mesh", "canvas", "suede"]


def synthetic_titles():
    for brand, model, color, material, size in itertools.product(
        _BRANDS, _MODELS, _COLORS, _MATERIALS, range(5, 13)
    ):
        yield f"{brand} {model} {material} sneaker {color} size {size}"


def drill_category() -> Category:
    """The drill's sneakers category with its schema of DRILL_ATTRIBUTES (made once)."""
    category, _ = Category.objects.get_or_create(name=DRILL_CATEGORY)
    if category.current_schema is None:
        schema = SchemaVersion.objects.create(category=category, version=1, note="fault drill / benchmark")
        for position, (attr, description, max_tokens) in enumerate(DRILL_ATTRIBUTES):
            Attribute.objects.create(
                schema=schema, position=position, name=attr, description=description, max_tokens=max_tokens
            )
    return category


def drill_catalog(name: str, products: int) -> Catalog:
    """A catalog holding (at least) the first `products` synthetic sneaker listings, 3 attributes each.

    Callers name it by its size ("Fault drill (200 products)"), so selecting it selects exactly those.
    """
    with transaction.atomic():
        category = drill_category()
        catalog, _ = Catalog.objects.get_or_create(name=name)
        have = set(catalog.products.values_list("sku", flat=True))
        rows = [
            Product(catalog=catalog, sku=f"DRILL-{i:06d}", title=title, category=category)
            for i, title in zip(range(products), itertools.cycle(synthetic_titles()), strict=False)
            if f"DRILL-{i:06d}" not in have
        ]
        Product.objects.bulk_create(rows, batch_size=2000)
    return catalog


def redis_is_local() -> bool:
    """True when REDIS_URL is the Redis that scripts/services.py manages (so it may restart it)."""
    url = urlparse(settings.REDIS_URL)
    return url.hostname in {"127.0.0.1", "localhost"} and (url.port or 6379) == int(
        os.environ.get("SLOTWISE_REDIS_PORT", "6380")
    )


def postgres_is_local() -> bool:
    """True when the database is on the port of this checkout's PostgreSQL (scripts/services.py
    then also checks that the server there runs from this checkout's data before restarting it)."""
    db = settings.DATABASES["default"]
    return db.get("HOST") in {"127.0.0.1", "localhost"} and int(db.get("PORT") or 5432) == int(
        os.environ.get("SLOTWISE_PG_PORT", "5433")
    )


def _services(action: str) -> None:
    done = subprocess.run(
        [sys.executable, str(settings.BASE_DIR / "scripts" / "services.py"), action],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode:
        raise RuntimeError(f"services.py {action} failed: {done.stderr.strip() or done.stdout.strip()}")


def restart_redis() -> None:
    _services("restart-redis")


def restart_postgres() -> None:
    _services("restart-postgres")


@dataclass
class Tally:
    products: int
    values_expected: int
    values_stored: int
    lost: int
    duplicated: int
    failed: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def tally(run: Run, seconds: float) -> Tally:
    """Values every product that did not fail must have, against what PostgreSQL holds.

    lost: expected (product, attribute) pairs with no row; duplicated: extra rows for one pair plus
    extra result writes of one product (a product decoded and written twice).
    """
    items = WorkItem.objects.filter(run=run)
    attrs_per_schema = dict(
        Attribute.objects.filter(schema__in=items.values("schema"))
        .values_list("schema")
        .annotate(n=Count("id"))
    )
    expected = 0
    extra_writes = 0
    for schema_id, status, writes in items.values_list("schema_id", "status", "writes"):
        if status != WorkItem.Status.FAILED:
            expected += attrs_per_schema.get(schema_id, 0)
        extra_writes += max(0, writes - 1) * attrs_per_schema.get(schema_id, 0)
    values = ExtractedValue.objects.filter(run=run).exclude(
        product__in=items.filter(status=WorkItem.Status.FAILED).values("product")
    )
    stored = values.count()
    distinct = values.values("product", "attribute").distinct().count()
    return Tally(
        products=items.count(),
        values_expected=expected,
        values_stored=stored,
        lost=expected - distinct,
        duplicated=(stored - distinct) + extra_writes,
        failed=items.filter(status=WorkItem.Status.FAILED).count(),
        seconds=round(seconds, 2),
    )
