"""Load the AVE files of shared/data/ave as they are: the JSON lines of OA-Mine, AE-110k and
WDC-PAVE, and ImplicitAVE's tab-separated files with the closed value lists of its options files.

Pure Python (no torch): the web app may import it. The schema of a category is the union of the
attribute names its records list, in order of first appearance.
"""

from __future__ import annotations

import csv
import json
import pathlib
from collections import Counter
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


def load(path: str | pathlib.Path, limit: int | None = None) -> list[Product]:
    """Any AVE file: ImplicitAVE's .tsv, else JSON lines."""
    if pathlib.Path(path).suffix == ".tsv":
        return load_tsv(path, limit)
    return load_jsonl(path, limit)


def judges_every_attribute(path: str | pathlib.Path) -> bool:
    """Whether an AVE file's gold judges every attribute its category names (the JSON-lines sets:
    their annotators tagged every value a title holds, so an attribute without gold is "n/a"), or
    only the pairs it lists (ImplicitAVE: one attribute a product, its other attributes unjudged)."""
    return pathlib.Path(path).suffix != ".tsv"


TITLE_MARK = "[Title] "  # ImplicitAVE's texts column starts with it


def load_tsv(path: str | pathlib.Path, limit: int | None = None) -> list[Product]:
    """ImplicitAVE (`id, images, category, texts, attribute_names, attribute_values`, one (product,
    attribute) pair a row): rows grouped by id into products, in first-seen order. Quotes are text
    (a title may open with one), not CSV quoting."""
    out: dict[str, Product] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            key = row["id"]
            if key not in out:
                if limit is not None and len(out) >= limit:
                    break
                text = row["texts"].removeprefix(TITLE_MARK).strip()
                out[key] = Product(key, row["category"], text, {})
            out[key].gold.setdefault(row["attribute_names"], []).append(row["attribute_values"])
    return list(out.values())


def majority_floor(path: str | pathlib.Path, products: list[Product]) -> dict | None:
    """The floor a model must beat on an ImplicitAVE file: the accuracy of always answering the
    most common value of each attribute, counted on the train.tsv beside it (never on the products
    scored). None: no train.tsv beside it, or the file is that train.tsv."""
    path = pathlib.Path(path)
    train = path.with_name("train.tsv")
    if path.name == train.name or not train.is_file():
        return None
    counts: dict[str, Counter] = {}
    for p in load_tsv(train):
        for attr, forms in p.gold.items():
            counts.setdefault(attr, Counter())[forms[0]] += 1
    majority = {attr: c.most_common(1)[0][0] for attr, c in counts.items()}
    pairs = [(attr, forms) for p in products for attr, forms in p.gold.items()]
    right = sum(majority.get(attr) in forms for attr, forms in pairs)
    return {"source": str(train), "pairs": len(pairs), "accuracy": right / len(pairs) if pairs else 0.0}


def load_options(path: str | pathlib.Path) -> dict[str, list[str]]:
    """An options file (ImplicitAVE's options_*.json): attribute -> its closed list of values."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError(f"{path}: not an options file (a JSON object of attribute -> list of values)")
    return {str(a): [str(v) for v in values] for a, values in data.items()}


def options_for(path: str | pathlib.Path, products: list[Product]) -> pathlib.Path | None:
    """The options file of an ImplicitAVE domain file (<root>/<domain>/val.tsv): the options_*.json
    in <root> that lists the most of its products' (attribute, gold value) pairs. The names do not
    say it (Footwear's values are in options_Clothing_Shoes_and_Jewelry.json). None: no such file."""
    best, best_hits = None, 0
    for candidate in sorted(pathlib.Path(path).resolve().parent.parent.glob("options_*.json")):
        options = load_options(candidate)
        hits = sum(v in options.get(a, ()) for p in products for a, forms in p.gold.items() for v in forms)
        if hits > best_hits:
            best, best_hits = candidate, hits
    return best


def schemas(products: list) -> dict[str, list[str]]:
    """category -> attribute names (union over the category's records, first-seen order). Any
    record with a category and a gold mapping will do (review/products_file.py's too)."""
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
