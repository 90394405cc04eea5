"""Rebuild the shipped demo catalog from OA-Mine (Apache-2.0): python catalog/demo/build_demo.py PATH.

Not used at run time; kept so the demo files can be regenerated and checked. It takes the first
PER_CATEGORY products of each category from train.jsonl, writes products.csv (sku, title,
category, then one column per attribute holding the gold value) and schemas.json (per category:
the union of attribute names, most frequent first, with prompt descriptions and token budgets
sized from the longest gold value). The attributes of TYPED become enumerations and booleans,
their known values mapped from the gold spans.
"""

import csv
import json
import math
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from catalog.kinds import BOOLEAN, ENUM, TEXT

PER_CATEGORY = 40
HERE = Path(__file__).resolve().parent
CHARS_PER_TOKEN = 3  # conservative for subword tokenizers on product text
MIN_BUDGET, MAX_BUDGET = 4, 24
REQUIRED_SHARE = 0.9
DESCRIPTIONS = {
    "Brand": "The brand or manufacturer name, as written in the title.",
    "Sub brand": "The product line or sub-brand below the main brand.",
    "Model name": "The model or style name of the product.",
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


@dataclass(frozen=True)
class Typed:
    """An attribute the demo types: an enumeration or a boolean (yes / no), and how a product's
    OA-Mine gold span of `source` (the attribute itself when empty; another attribute's for a
    boolean derived from it) maps to its value: the first value whose pattern the span matches,
    ignoring case. No match, or no span: the product has no known value (OA-Mine annotates what a
    title says, so a title that says nothing is left unknown rather than taken for "no")."""

    kind: str
    choices: tuple[tuple[str, str], ...]  # (value, pattern); an enumeration's values in this order
    description: str
    source: str = ""

    def value_of(self, span: str) -> str:
        return next((value for value, pattern in self.choices if re.search(pattern, span, re.I)), "")

    @property
    def allowed_values(self) -> list[str]:
        return [value for value, _ in self.choices] if self.kind == ENUM else []


YES, NO = "yes", "no"
# Who a product is for, as the titles say it; "men and women" is unisex (Unise: a typo in the data).
GENDER = Typed(
    ENUM,
    (
        ("Unisex", r"unise|\bmen\b.*\bwomen|\bwomen\b.*\bmen"),
        ("Women", r"women|ladies"),
        ("Men", r"\bmen"),
        ("Girls", r"girl"),
        ("Boys", r"boy"),
        ("Kids", r"kid|child"),
    ),
    "Who the product is made for: unisex, women, men, girls, boys or kids.",
)
# A named scent is a scented product: "no" for any span that is not a free / unscented one.
FRAGRANCE_FREE = Typed(
    BOOLEAN,
    ((YES, r"free|unscented"), (NO, r"\w")),
    "Whether the product is fragrance free (unscented).",
    source="Scent",
)
# Per category, the attributes that become typed: at least one enumeration and one boolean each.
TYPED = {
    "Breakfast Cereal": {
        "Container": Typed(
            ENUM,
            (("Box", r"box"), ("Bag", r"bag"), ("Cup", r"cup"), ("Packet", r"packet")),
            "The container the cereal is sold in.",
        ),
        "Organic": Typed(
            BOOLEAN, ((YES, r"organic"),), "Whether the product is sold as organic.", source="Specialty"
        ),
    },
    "Coffee": {
        "Roast type": Typed(
            ENUM,
            (
                ("Light Roast", r"light"),
                ("Medium Dark Roast", r"medium[ -]dark"),
                ("Medium Roast", r"medium"),
                ("Dark Roast", r"dark"),
                ("French Roast", r"french"),
                ("Italian Roast", r"italian"),
                ("Espresso Roast", r"espresso"),
            ),
            "How dark the coffee is roasted.",
        ),
        "Decaffeinated": Typed(
            BOOLEAN,
            ((YES, r"decaf"), (NO, r"caffeinated")),
            "Whether the coffee is decaffeinated.",
            source="Caffeine content",
        ),
    },
    "Conditioner": {
        "Gender": GENDER,
        "Leave-in": Typed(
            BOOLEAN,
            ((YES, r"leave-in"), (NO, r"mask|deep|shampoo|co-wash")),  # these are rinsed out
            "Whether the conditioner is left in rather than rinsed out.",
            source="Item form",
        ),
    },
    "Laundry Detergent": {
        "Item form": Typed(
            ENUM,
            (
                ("Pods", r"pac|pod"),  # before liquid: "liquid detergent pacs"
                ("Liquid", r"liquid"),
                ("Powder", r"powder"),
                ("Flakes", r"flake"),
                ("Sheets", r"sheet|strip"),
                ("Gel", r"gel"),
                ("Spray", r"spray"),
            ),
            "The physical form of the detergent.",
        ),
        "Fragrance free": FRAGRANCE_FREE,
    },
    "Safety Mask": {
        "Gender": GENDER,
        "Reusable": Typed(
            BOOLEAN,
            ((YES, r"reusable|washable"), (NO, r"disposable")),
            "Whether the mask can be washed and worn again.",
            source="Reusability",
        ),
    },
    "Shoes": {
        "Gender": GENDER,
        "Waterproof": Typed(BOOLEAN, ((YES, r"waterproof"),), "Whether the shoe is waterproof."),
    },
    "Sunscreen": {
        "Gender": GENDER,
        "Item form": Typed(
            ENUM,
            (
                ("Stick", r"stick"),  # before lotion: "lotion stick"
                ("Lotion", r"lotion"),
                ("Spray", r"spray|mist"),
                ("Cream", r"cream"),
                ("Gel", r"gel"),
                ("Balm", r"balm"),
            ),
            "The physical form of the sunscreen.",
        ),
        "Fragrance free": FRAGRANCE_FREE,
    },
    "Tea": {
        "Tea variety": Typed(
            ENUM,
            (
                ("Black tea", r"black"),
                ("Green tea", r"green|matcha"),
                ("White tea", r"white"),
                ("Oolong tea", r"oolong"),
                ("Herbal tea", r"herbal|chamomile|rooibos|hibiscus|mint"),
            ),
            "The kind of tea.",
        ),
        "Caffeine free": Typed(
            BOOLEAN,
            ((YES, r"caffeine[ -]free|decaf"), (NO, r"caffein")),
            "Whether the tea has no caffeine.",
            source="Caffeine content",
        ),
    },
    "Toothbrush": {
        "Firmness": Typed(
            ENUM,
            (
                ("Extra soft", r"extra soft"),
                ("Ultra soft", r"ultra soft"),
                ("Soft", r"soft"),
                ("Medium", r"medium"),
                ("Firm", r"firm|hard"),
            ),
            "How firm the bristles are.",
        ),
        "Electric": Typed(
            BOOLEAN,
            ((YES, r"electric|power|sonic|battery"), (NO, r"manual")),
            "Whether the toothbrush is powered (electric, sonic, battery).",
            source="Operation mode",
        ),
    },
    "Vitamin": {
        "Gender": GENDER,
        "Item form": Typed(
            ENUM,
            (
                ("Tablets", r"\btab"),  # not "vegetable"
                ("Softgels", r"soft ?gel"),  # before capsules: "softgel capsules"
                ("Capsules", r"capsule"),
                ("Gummies", r"gumm"),
                ("Powder", r"powder"),
                ("Lozenges", r"lozenge"),
                ("Liquid", r"liquid|drop"),
            ),
            "The physical form of the supplement.",
        ),
        "Vegan": Typed(BOOLEAN, ((YES, r"vegan"),), "Whether the product is vegan.", source="Diet"),
    },
}


def description_for(name: str, category: str) -> str:

    return DESCRIPTIONS.get(
        name, f"The {name.lower()} of this {category.lower()} product, as written in the title."
    )


def budget_for(values: list[str]) -> int:
    longest = max((len(v) for v in values), default=12)
    return max(MIN_BUDGET, min(MAX_BUDGET, math.ceil(longest / CHARS_PER_TOKEN) + 2))


def attribute_of(name: str, category: str, values: list[str], share: float, typed: Typed | None) -> dict:
    """One attribute of a category's schema, as schemas.json holds it (the schema export's form)."""
    return {
        "name": name,
        "description": typed.description if typed else description_for(name, category),
        "kind": typed.kind if typed else TEXT,
        "unit": "",
        "allowed_values": typed.allowed_values if typed else [],
        "max_tokens": budget_for([value for value, _ in typed.choices] if typed else values),
        "required": share >= REQUIRED_SHARE,
        "free": False,
    }


def known_value(category: str, name: str, gold: dict[str, str]) -> str:
    """A product's known value of an attribute: its gold span, or what the span says in the type."""
    typed = TYPED.get(category, {}).get(name)
    if typed is None:
        return gold.get(name, "")
    return typed.value_of(gold.get(typed.source or name, ""))


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
        typed = TYPED.get(category, {})
        attributes = [
            attribute_of(name, category, values[name], count / len(items), typed.get(name))
            for name, count in frequency.most_common()
        ]
        # booleans derived from another attribute's gold come last
        attributes += [
            attribute_of(name, category, [], 0, t) for name, t in typed.items() if name not in frequency
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
                        *(known_value(category, n, gold) for n in attribute_order),
                    ]
                )


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ave/oa-mine/train.jsonl"))
