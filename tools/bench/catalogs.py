"""Catalogs the run benchmark decodes: the demo catalog's real products (OA-Mine titles in 10
categories, each with its own schema), or the fault drill's synthetic single-schema listings."""

import io
import itertools
from collections import defaultdict

from django.core.management import call_command
from django.db import transaction

from catalog.management.commands.load_demo_catalog import DEMO_CATALOG
from catalog.models import Catalog, Product


def demo_bench_catalog(name: str, products: int) -> Catalog:
    """A catalog of `products` copies of the demo catalog's products, taken one category after the
    other (round robin), so that any prefix of it holds every category; beyond the demo's size the
    titles repeat under new SKUs (`<sku>~2`, ...). Loads the demo catalog first when it is missing."""
    if not Catalog.objects.filter(name=DEMO_CATALOG).exists():
        call_command("load_demo_catalog", stdout=io.StringIO())
    by_category = defaultdict(list)
    for product in Product.objects.filter(catalog__name=DEMO_CATALOG).order_by("id"):
        by_category[product.category_id].append(product)
    interleaved = [p for group in itertools.zip_longest(*by_category.values()) for p in group if p]
    with transaction.atomic():
        catalog, _ = Catalog.objects.get_or_create(name=name)
        have = set(catalog.products.values_list("sku", flat=True))
        rows = []
        for i in range(products):
            source, lap = interleaved[i % len(interleaved)], i // len(interleaved)
            sku = source.sku if lap == 0 else f"{source.sku}~{lap + 1}"
            if sku not in have:
                rows.append(
                    Product(
                        catalog=catalog,
                        sku=sku,
                        title=source.title,
                        description=source.description,
                        category_id=source.category_id,
                    )
                )
        Product.objects.bulk_create(rows, batch_size=2000)
    return catalog
