"""The drills' synthetic catalog (also the run benchmark's `--catalog synthetic`): sneaker listings of
one category whose schema has three attributes."""

import itertools

from django.db import transaction

from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion

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
