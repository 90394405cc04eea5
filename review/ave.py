"""Gold in the JSON-lines format of shared/data/ave, so `python -m extraction train` can learn from it.

One line per product:
    {"id": "<catalog>/<sku>", "input": <document>, "category": <category>,
     "target_scores": {<attribute>: {<approved value>: 1}, ...}}
An approved "n/a" is written as the key "n/a" (the attribute is absent), as in the data sets.
A record also carries what the run's prompt says of its attributes, so that training reads the
prompt decoding reads: an enumeration's allowed values under "options" (it trains as an enumeration,
its values listed in its prompt line, as ImplicitAVE's records do) and a described attribute's
description under "descriptions".
"""

import json
from collections.abc import Iterable, Iterator

from django.db.models import QuerySet

from catalog.models import Attribute, Product
from extraction.engine.splits import DESCRIPTIONS_KEY, OPTIONS
from review.models import GoldValue


class _Prompts:
    """What each schema version's prompt says of its attributes, read once per version."""

    def __init__(self):
        self._of: dict[int, dict[str, Attribute]] = {}

    def said(self, schema_id: int, name: str) -> dict:
        """name's options and description as schema_id's prompt says them ({} where it says neither)."""
        if schema_id not in self._of:
            self._of[schema_id] = {a.name: a for a in Attribute.objects.filter(schema_id=schema_id)}
        attribute = self._of[schema_id].get(name)
        said = {}
        if attribute is not None and attribute.kind == Attribute.Kind.ENUM and attribute.allowed_values:
            said[OPTIONS] = [str(v) for v in attribute.allowed_values]
        if attribute is not None and attribute.description:
            said[DESCRIPTIONS_KEY] = attribute.description
        return said


def _told(record: dict, said: dict[str, dict]) -> dict:
    """record with what the prompt says of each attribute (options, descriptions) attached."""
    for key in (OPTIONS, DESCRIPTIONS_KEY):
        told = {name: words[key] for name, words in said.items() if key in words}
        if told:
            record[key] = told
    return record


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
    said: dict[str, dict] = {}  # attribute -> what its latest schema version's prompt says of it
    product_id = None
    prompts = _Prompts()
    for row in rows.iterator(chunk_size=2000):
        if row.product_id != product_id:
            if record is not None:
                yield _told(record, said)
            product_id, said = row.product_id, {}
            record = {
                "id": product_key(row.product),
                "input": row.product.document,
                "category": row.product.category.name,
                "target_scores": {},
            }
        record["target_scores"][row.attribute_name] = {row.value: 1}
        said[row.attribute_name] = prompts.said(row.schema_id, row.attribute_name)
    if record is not None:
        yield _told(record, said)


def write_jsonl(out, records: Iterable[dict]) -> int:
    count = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
