"""Gold rows for tests: a catalog's known values made gold, as a curated catalog's would be; blind
labels, as reviewers who saw no model output would type them."""

from django.db import transaction
from django.db.models import QuerySet

from review.models import GoldValue


def seed_gold_from_known_values(products: QuerySet, user=None) -> int:
    """Make the catalog's known attribute values gold (under each category's current schema).

    Known values already on a product (a curated catalog, the demo catalog's annotations) are as
    good as a reviewer's approval; values reviewers approved stay as they are.
    """
    rows = []
    schemas: dict[int, tuple] = {}  # category id -> (current schema, its attribute names)
    for product in products.select_related("category"):
        if product.category_id not in schemas:
            schema = product.category.current_schema
            names = set(schema.attributes.values_list("name", flat=True)) if schema else set()
            schemas[product.category_id] = (schema, names)
        schema, names = schemas[product.category_id]
        if schema is None or not product.known_values:
            continue
        rows += [
            GoldValue(
                product=product,
                attribute_name=name,
                schema=schema,
                value=str(value),
                provenance=GoldValue.Provenance.CATALOG,
                approved_by=user,
            )
            for name, value in product.known_values.items()
            if name in names and value not in (None, "")
        ]
    with transaction.atomic():
        before = GoldValue.objects.count()
        GoldValue.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)
        return GoldValue.objects.count() - before


def label_blind(values, user, right=lambda i, value: True) -> None:
    """Blind labels of `values`' products, one per value's attribute: the value itself where
    right(i, value) (the model got it right), else another."""
    GoldValue.objects.bulk_create(
        GoldValue(
            product=v.product,
            attribute_name=v.attribute.name,
            schema=v.attribute.schema,
            value=v.value if right(i, v) else "something else",
            provenance=GoldValue.Provenance.BLIND,
            approved_by=user,
        )
        for i, v in enumerate(values)
    )
