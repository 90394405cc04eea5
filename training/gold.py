"""The reviewed gold a training job learns from, and the products it holds back to prove the gain.

Reviewed gold is what a person made: typed blind, a correction, or an acceptance by hand of a run's
value (review/gold.py). Values accepted in bulk are never gold, and the catalog's own known values
were not reviewed: neither teaches the model here.

The held-back products are drawn before training, seeded, by product (all of a product's gold
goes one way): blind-labelled products first (they are the fair sample of the catalog, the
dashboard's honest gold), then the others, until the share is reached. They are never trained on,
and the job scores the old and the new version on them.
"""

import random
from collections import Counter

from catalog.models import Catalog
from review.ave import gold_records
from review.models import GoldValue

Provenance = GoldValue.Provenance
REVIEWED = (Provenance.BLIND, Provenance.CORRECTED, Provenance.ACCEPTED)


def reviewed_gold(catalog: Catalog):
    return GoldValue.objects.filter(product__catalog=catalog, provenance__in=REVIEWED)


def counts_by_provenance(gold) -> dict:
    """{"blind": values, "corrected": ..., "accepted": ..., "values": all, "products": products}."""
    kinds = Counter(gold.values_list("provenance", flat=True))
    counts = {str(kind): kinds.get(kind, 0) for kind in REVIEWED}
    counts["values"] = sum(kinds.values())
    counts["products"] = gold.values("product_id").distinct().count()
    return counts


def hold_back(catalog: Catalog, share: float, seed: int) -> tuple[list[int], list[int]]:
    """(held-back product ids, trained-on product ids) over the catalog's reviewed products."""
    gold = reviewed_gold(catalog)
    products = sorted(set(gold.values_list("product_id", flat=True)))
    blind = set(gold.filter(provenance=Provenance.BLIND).values_list("product_id", flat=True))
    rng = random.Random(seed)
    first = [p for p in products if p in blind]
    then = [p for p in products if p not in blind]
    rng.shuffle(first)
    rng.shuffle(then)
    wanted = round(share * len(products)) if len(products) > 1 else 0
    held = sorted((first + then)[: max(wanted, 1 if len(products) > 1 and share > 0 else 0)])
    trained = [p for p in products if p not in set(held)]
    return held, trained


def training_records(catalog: Catalog, product_ids: list[int]) -> list[dict]:
    """AVE records (review/ave.py) of the reviewed gold of these products."""
    return list(gold_records(reviewed_gold(catalog).filter(product_id__in=product_ids)))


def held_back_gold(catalog: Catalog, product_ids: list[int]) -> dict[int, dict[str, str]]:
    """{product id: {attribute: gold value}} of the held-back products (a later schema wins)."""
    out: dict[int, dict[str, str]] = {}
    rows = reviewed_gold(catalog).filter(product_id__in=product_ids).order_by("schema__version")
    for product_id, name, value in rows.values_list("product_id", "attribute_name", "value"):
        out.setdefault(product_id, {})[name] = value
    return out
