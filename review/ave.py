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

    def attributes(self, schema_id: int) -> dict[str, Attribute]:
        if schema_id not in self._of:
            self._of[schema_id] = {a.name: a for a in Attribute.objects.filter(schema_id=schema_id)}
        return self._of[schema_id]

    def add(self, record: dict, schema_id: int, name: str) -> None:
        """name's options and description as schema_id says them (a later version replaces an
        earlier one's, as its gold does)."""
        attribute = self.attributes(schema_id).get(name)
        said = {}
        if attribute is not None and attribute.kind == Attribute.Kind.ENUM and attribute.allowed_values:
            said[OPTIONS] = [str(v) for v in attribute.allowed_values]
        if attribute is not None and attribute.description:
            said[DESCRIPTIONS_KEY] = attribute.description
        for key in (OPTIONS, DESCRIPTIONS_KEY):
            told = {k: v for k, v in record.get(key, {}).items() if k != name}
            if key in said:
                told[name] = said[key]
            if told:
                record[key] = told
            else:
                record.pop(key, None)


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
    prompts = _Prompts()
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
        prompts.add(record, row.schema_id, row.attribute_name)
    if record is not None:
        yield record


def write_jsonl(out, records: Iterable[dict]) -> int:
    count = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        count += 1
    return count
