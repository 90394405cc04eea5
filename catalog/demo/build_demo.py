"""Rebuild the shipped demo catalog from OA-Mine (Apache-2.0): python catalog/demo/build_demo.py PATH.

Not used at run time; kept so the demo files can be regenerated and checked. It takes the first
PER_CATEGORY products of each category from train.jsonl, writes products.csv (sku, title,
category, then one column per attribute holding the gold value) and schemas.json (per category:
the union of attribute names, most frequent first, with prompt descriptions and token budgets
sized from the longest gold value).
"""

import csv
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

PER_CATEGORY = 40
HERE = Path(__file__).resolve().parent
CHARS_PER_TOKEN = 3  # conservative for subword tokenizers on product text
MIN_BUDGET, MAX_BUDGET = 4, 24
REQUIRED_SHARE = 0.9
DESCRIPTIONS = {
    "Brand": "The brand or manufacturer name, as written in the title.",
    "Sub brand": "The product line or sub-brand below the main brand.",
    "Model name": "The model or style name of the product.",
    "Gender": "Who the product is made for: men's, women's, unisex, boys', girls'.",
    "Age": "The age group the product is for, e.g. adult, kids, baby.",
    "Age range": "The age range the product is for, e.g. adult, 2-7 years.",
    "Color": "The colour or colour name of the product.",
    "Size": "The size, as written, e.g. 9 M US, medium, 7 inch.",
    "Material": "What the product is made of, e.g. leather, cotton, nylon.",
    "Net content": "The amount in one package with its unit, e.g. 12 oz, 100 count.",
    "Volume": "The liquid volume with its unit, e.g. 33.8 fl oz.",
    "Pack size": "How many packages are sold together, e.g. pack of 6.",
    "Item form": "The physical form, e.g. capsule, liquid, ground, spray, pods.",
    "Flavor": "The flavour of the product.",
    "Scent": "The scent or fragrance.",
    "Specialty": "A special property claimed, e.g. organic, gluten free, fluoride free.",
    "Caffeine content": "Caffeine content, e.g. decaf, caffeinated.",
    "Country": "The country of origin mentioned in the title.",
}


def description_for(name: str, category: str) -> str:
    return DESCRIPTIONS.get(
        name, f"The {name.lower()} of this {category.lower()} product, as written in the title."
    )


def budget_for(values: list[str]) -> int:
    longest = max((len(v) for v in values), default=12)
    return max(MIN_BUDGET, min(MAX_BUDGET, math.ceil(longest / CHARS_PER_TOKEN) + 2))


def build(source: Path) -> None:
    picked = defaultdict(list)
    for line in source.open(encoding="utf-8"):
        item = json.loads(line)
        if len(picked[item["category"]]) < PER_CATEGORY:
            picked[item["category"]].append(item)
    schemas, attribute_order = [], []
    for category, items in sorted(picked.items()):
        frequency = Counter(name for item in items for name in item["target_scores"])
        values = defaultdict(list)
        for item in items:
            for name, scores in item["target_scores"].items():
                values[name].extend(scores)
        attributes = [
            {
                "name": name,
                "description": description_for(name, category),
                "kind": "text",
                "unit": "",
                "allowed_values": [],
                "max_tokens": budget_for(values[name]),
                "required": count / len(items) >= REQUIRED_SHARE,
            }
            for name, count in frequency.most_common()
        ]
        schemas.append(
            {"format": "slotwise-schema/1", "category": category, "description": "", "attributes": attributes}
        )
        attribute_order.extend(a["name"] for a in attributes if a["name"] not in attribute_order)
    (HERE / "schemas.json").write_text(
        json.dumps(schemas, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with (HERE / "products.csv").open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sku", "title", "category", *attribute_order])
        for category, items in sorted(picked.items()):
            prefix = category.replace(" ", "")[:4].upper()
            for number, item in enumerate(items, start=1):
                gold = {name: max(scores, key=scores.get) for name, scores in item["target_scores"].items()}
                writer.writerow(
                    [
                        f"OAM-{prefix}-{number:03d}",
                        item["input"],
                        category,
                        *(gold.get(n, "") for n in attribute_order),
                    ]
                )


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ave/oa-mine/train.jsonl"))
