"""Load the AVE JSON-lines files of shared/data/ave (OA-Mine, AE-110k, WDC-PAVE) as they are.

Pure Python (no torch): the web app may import it. The schema of a category is the union of the
attribute names its records list, in order of first appearance.
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass


@dataclass
class Product:
    key: str
    category: str
    text: str
    gold: dict[str, list[str]]  # attribute -> accepted surface forms ("n/a" = absent)


def product_text(record: dict) -> str:
    if "input" in record:
        return str(record["input"])
    parts = [record.get("input_title") or "", record.get("input_description") or ""]
    return " ".join(p.strip() for p in parts if p and p.strip())


def gold_forms(target_scores: dict) -> dict[str, list[str]]:
    # oa-mine / ae-110k: {"form": 1}; wdc-pave: {"form": {"pid": [...], "score": 1}}; both: keys are the forms
    return {attr: [str(f) for f in forms] for attr, forms in target_scores.items()}


def product_from_record(record: dict, index: int = 0) -> Product:
    key = str(record.get("id", index))
    return Product(
        key,
        str(record.get("category", "")),
        product_text(record),
        gold_forms(record.get("target_scores", {})),
    )


def products_from_records(records: list[dict]) -> list[Product]:
    """Raw records (any of the three formats) -> products; key = record id, else its index."""
    return [product_from_record(r, i) for i, r in enumerate(records)]


def load_jsonl(path: str | pathlib.Path, limit: int | None = None) -> list[Product]:
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            out.append(product_from_record(json.loads(line), i))
            if limit is not None and len(out) >= limit:
                break
    return out


def schemas(products: list[Product]) -> dict[str, list[str]]:
    """category -> attribute names (union over the category's records, first-seen order)."""
    out: dict[str, dict[str, None]] = {}
    for p in products:
        names = out.setdefault(p.category, {})
        for attr in p.gold:
            names.setdefault(attr, None)
    return {c: list(n) for c, n in out.items()}


def by_category(products: list[Product]) -> dict[str, list[int]]:
    """category -> indices of its products (first-seen order)."""
    out: dict[str, list[int]] = {}
    for i, p in enumerate(products):
        out.setdefault(p.category, []).append(i)
    return out
