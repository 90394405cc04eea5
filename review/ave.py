"""Gold in the JSON-lines format of shared/data/ave, so `python -m extraction train` can learn from it.

One line per product:
    {"id": "<catalog>/<sku>", "input": <document>, "category": <category>,
     "target_scores": {<attribute>: {<approved value>: 1}, ...}}
An approved "n/a" is written as the key "n/a" (the attribute is absent), as in the data sets.
"""

import json
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet

from catalog.models import Product
from review.models import GoldValue


def product_key(product: Product) -> str:
    return f"{product.catalog.name}/{product.sku}"


def gold_records(gold: QuerySet | None = None) -> Iterator[dict]:
    """AVE records, one per product that has gold; a later schema version wins on a shared name."""
    rows = (
        (gold if gold is not None else GoldValue.objects.all())
        .select_related("product", "product__catalog", "product__category", "schema")
        .order_by("product__catalog__name", "product__sku", "schema__version", "attribute_name")
    )
    record: dict | None = None
    product_id = None
    for row in rows.iterator(chunk_size=2000):
        if row.product_id != product_id:
            if record is not None:
                yield record
            product_id = row.product_id
            record = {
                "id": product_key(row.product),
                "input": row.product.document,
                "category": row.product.category.name,
                "target_scores": {},
            }
        record["target_scores"][row.attribute_name] = {row.value: 1}
    if record is not None:
        yield record


def write_jsonl(out, records: Iterable[dict]) -> int:
    count = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
