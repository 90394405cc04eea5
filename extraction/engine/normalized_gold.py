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
- an attribute whose normalization instruction names a closed list ("Give the Product Type as
  EXACTLY ONE of the following: - Storage Solutions - ...") decodes as an enumeration of that list
  in its category (closed_lists; the gold writes a few values the instruction does not, "SCSI
  Interfaces" for "SCSI Interface", so the values the training split's gold uses join the list);
- an attribute normalized as text by an instruction ("Remove any non-alphanumeric characters ...
  from the Part Number", "Return the Brand in Uppercase Format") carries that instruction as its
  description in the prompt (text_instructions), in training and in evaluation alike: the slot
  reads how to write its value, as a catalog team's description would tell it;
- every other attribute stays extractive, and is compared as the metric compares any value.
"""

from __future__ import annotations

import csv
import json
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
DESCRIPTIONS = "attribute_descriptions.csv"  # WDC-PAVE's attribute guide, beside its train.jsonl
OPTIONS_SUFFIX = "_options"  # <normalized file stem>_options.json: category -> attribute -> values
# <normalized file stem>_instructions.json: category -> attribute -> its instruction (text_instructions)
INSTRUCTIONS_SUFFIX = "_instructions"
_CLOSED_LIST = re.compile(r"ONE of the following(?: options)?:", re.IGNORECASE)
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


def _instructions(descriptions: pathlib.Path) -> list[tuple[str, str, str]]:
    """(category, attribute, normalization instruction) of every row of the attribute guide."""
    with open(descriptions, encoding="utf-8", newline="") as handle:
        return [
            (row["Category"], row["Attribute"], (row.get("Normalization_instruction") or "").strip())
            for row in csv.DictReader(handle)
        ]


def text_instructions(descriptions: pathlib.Path) -> dict[str, dict[str, str]]:
    """category -> attribute -> its normalization instruction (one line), for the attributes it
    normalizes as text: an instruction other than "None" that names no closed list, outside
    NUMBERS (whose number rule converts the unit)."""
    out: dict[str, dict[str, str]] = {}
    for category, attribute, text in _instructions(descriptions):
        if text and text != "None" and not _CLOSED_LIST.search(text) and attribute not in NUMBERS:
            out.setdefault(category, {})[attribute] = " ".join(text.split())
    return out


def instruction_lists(descriptions: pathlib.Path) -> dict[str, dict[str, list[str]]]:
    """category -> attribute -> the values its Normalization_instruction allows, for instructions
    that name a closed list: the "-" lines after "ONE of the following:", up to the first line
    that is not one (a rule about two colours follows the colour list)."""
    lists: dict[str, dict[str, list[str]]] = {}
    for category, attribute, text in _instructions(descriptions):
        found = _CLOSED_LIST.search(text)
        if found is None:
            continue
        items: list[str] = []
        for line in text[found.end() :].splitlines():
            line = line.strip()
            if line.startswith("-"):
                items.append(line[1:].strip())
            elif items:
                break
        if items:
            lists.setdefault(category, {})[attribute] = items
    return lists


def closed_lists(descriptions: pathlib.Path, train: list[Product]) -> dict[str, dict[str, list[str]]]:
    """The instruction's closed lists, each followed by the values the training products' normalized
    gold gives that attribute in that category outside the list (first seen first): the values a
    catalog team's enumeration would hold. Only training products: a dev value never enters."""
    lists = instruction_lists(descriptions)
    for p in train:
        for attr, forms in p.gold.items():
            values = lists.get(p.category, {}).get(attr)
            if values is None:
                continue
            values.extend(f for f in forms if f.strip().lower() != "n/a" and f not in values)
    return lists


def options_path(normalized: pathlib.Path) -> pathlib.Path:
    """Where a normalized gold file's closed lists are stored (written with the WDC-PAVE dev split)."""
    return normalized.with_name(f"{normalized.stem}{OPTIONS_SUFFIX}.json")


def instructions_path(normalized: pathlib.Path) -> pathlib.Path:
    """Where a normalized gold file's text instructions are stored (written with the dev split)."""
    return normalized.with_name(f"{normalized.stem}{INSTRUCTIONS_SUFFIX}.json")


def load_per_category(path: pathlib.Path) -> dict[str, dict]:
    """A stored file of options_path or instructions_path: category -> attribute -> its closed list
    or its instruction."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ValueError(f"{path}: not a JSON object of category -> attribute -> list or instruction")
    return data
