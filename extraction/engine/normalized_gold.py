"""WDC-PAVE's normalized gold (`train_normalized.jsonl`): the decoding choices it needs and how a
prediction is compared with it. Pure Python (no torch).

The normalized gold rewrites most values (attribute_descriptions.csv, column
Normalization_instruction): lengths become a number of centimetres with one decimal ("47-1/4"" ->
"120.0"), a paper weight kilograms, a food's size grams, counts a bare number ("Single-core" ->
"1"), names are expanded ("HP" -> "Hewlett-Packard") and a product type is a category label. So:

- the attributes of NUMBERS decode under the number rule in their unit, and are compared as
  numbers rounded as the instruction says (prediction "120.02 cm" and gold "120.0" agree);
- an attribute whose normalized gold is mostly not a span of its document decodes as free text
  (free_attributes: under FREE_SHARE of its valued pairs verbatim in the text; a schema choice
  measured on the file's gold, as the training command measures the extractive rule);
- every other attribute stays extractive, and is compared as the metric compares any value.
"""

from __future__ import annotations

import pathlib
import re

from extraction.engine.data import Product

# attribute -> (unit, decimals), from the normalization instructions of attribute_descriptions.csv
NUMBERS: dict[str, tuple[str, int]] = {
    "Width": ("cm", 1),
    "Length": ("cm", 1),
    "Depth": ("cm", 1),
    "Height": ("cm", 1),
    "Paper Weight": ("kg", 1),
    "Size/Weight": ("g", 0),
    "Pack Quantity": ("", 0),
    "Ports": ("", 0),
    "Processor Core": ("", 0),
    "Rotational Speed": ("", 0),
}
FREE_SHARE = 0.95  # below this share of verbatim normalized values, an attribute decodes free
SUFFIX = "_normalized"
_FIRST_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


def paths(data: str | pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(extracted gold file, normalized gold file) of a WDC-PAVE file, either given: train.jsonl
    and train_normalized.jsonl side by side."""
    path = pathlib.Path(data)
    if path.stem.endswith(SUFFIX):
        return path.with_name(path.stem.removesuffix(SUFFIX) + path.suffix), path
    return path, path.with_name(path.stem + SUFFIX + path.suffix)


def canonical(attribute: str, text: str) -> str:
    """A value as the normalized gold writes it: a number of NUMBERS rounded as its instruction
    says (its first number; the unit is the attribute's), anything else unchanged."""
    if attribute not in NUMBERS:
        return text
    match = _FIRST_NUMBER.search(text)
    if match is None:
        return text
    decimals = NUMBERS[attribute][1]
    number = round(float(match.group(0).replace(",", ".")), decimals)
    return f"{number:.{decimals}f}"


def canonical_products(products: list[Product]) -> list[Product]:
    """The products with every gold form of a NUMBERS attribute made canonical."""
    return [
        Product(
            p.key,
            p.category,
            p.text,
            {a: [canonical(a, f) if f != "n/a" else f for f in forms] for a, forms in p.gold.items()},
        )
        for p in products
    ]


def free_attributes(products: list[Product]) -> set[str]:
    """Attributes (outside NUMBERS) whose normalized gold values are verbatim in their product's
    text for under FREE_SHARE of the valued pairs."""
    verbatim: dict[str, list[bool]] = {}
    for p in products:
        text = " ".join(p.text.split())
        for a, forms in p.gold.items():
            valued = [f for f in forms if f.strip().lower() != "n/a"]
            if valued and a not in NUMBERS:
                verbatim.setdefault(a, []).append(any(f in text for f in valued))
    return {a for a, v in verbatim.items() if sum(v) / len(v) < FREE_SHARE}
