"""Normalized values: what a reviewer compares and what HPD / AR agreement is computed on.

Rules: trim and collapse spaces; "n/a" (any case) stays "n/a"; numbers with a unit are converted to
the attribute's unit when both units are known lengths, weights or volumes; enumerations take the
allowed value's spelling; booleans become yes / no. Anything the rules do not recognise is kept as
the trimmed text, never dropped; only checked_value, for what a person types, refuses it instead.
"""

import re

from catalog.kinds import BOOLEAN, ENUM, NUMBER, TEXT
from extraction.domain import NA

# Factor to a base unit per dimension (metre, gram, litre); spelling variants map to one key.
_UNIT_FACTORS = {
    "mm": ("length", 0.001),
    "cm": ("length", 0.01),
    "m": ("length", 1.0),
    "in": ("length", 0.0254),
    "ft": ("length", 0.3048),
    "mg": ("mass", 0.001),
    "g": ("mass", 1.0),
    "kg": ("mass", 1000.0),
    "oz": ("mass", 28.349523125),
    "lb": ("mass", 453.59237),
    "ml": ("volume", 0.001),
    "cl": ("volume", 0.01),
    "l": ("volume", 1.0),
    "floz": ("volume", 0.0295735),
}
_UNIT_SPELLINGS = {
    "inch": "in",
    "inches": "in",
    '"': "in",
    "''": "in",
    "feet": "ft",
    "foot": "ft",
    "gram": "g",
    "grams": "g",
    "gr": "g",
    "kilogram": "kg",
    "kilograms": "kg",
    "kgs": "kg",
    "ounce": "oz",
    "ounces": "oz",
    "lbs": "lb",
    "pound": "lb",
    "pounds": "lb",
    "liter": "l",
    "litre": "l",
    "liters": "l",
    "litres": "l",
    "milliliter": "ml",
    "millilitre": "ml",
    "fl oz": "floz",
    "fl. oz": "floz",
    "fl.oz": "floz",
    "meter": "m",
    "metre": "m",
    "meters": "m",
    "metres": "m",
}
# The number grammar, here once (a number slot's rule, constraints.NumberRule, accepts the same).
# ASCII digits only, at most 15 (and 6 decimals: what a float keeps exactly); other scripts' digits
# and longer numbers stay text, which checked_value refuses. A number is a decimal ("1.5", "1,5"),
# a fraction ("3/4") or a whole number and a fraction ("47-1/4", "47 1/4": sizes in inches as US
# catalogues write them). Only a decimal takes a sign.
DECIMAL = r"[0-9]{1,15}(?:[.,][0-9]{1,6})?"
NUMBER_TEXT = rf"(?:{DECIMAL}|(?:[0-9]{{1,15}}[- ])?[0-9]{{1,6}}/[0-9]{{1,6}})"
_NUMBER_WITH_UNIT = re.compile(rf"^\s*(-?{DECIMAL}|{NUMBER_TEXT})\s*([a-zA-Z\"'. ]*?)\s*$")
_TRUE = {"yes", "y", "true", "1"}
_FALSE = {"no", "n", "false", "0"}
YES, NO = "yes", "no"
BOOLEAN_VALUES = (YES, NO)


def known_units(unit: str = "") -> list[str]:
    """The unit spellings (lowercase) a number in ``unit`` may be written with, so that it converts
    to ``unit``: those of its dimension when the rules know it, else ``unit`` alone; without a unit,
    every spelling the rules know (what a number slot may write after its number,
    extraction.engine.decode.constraints.NumberRule)."""
    spellings = set(_UNIT_FACTORS) | set(_UNIT_SPELLINGS)
    if unit.strip():
        target = _UNIT_FACTORS.get(unit_key(unit))
        if target is None:
            return [unit.strip().lower()]
        same = {s for s in spellings if _UNIT_FACTORS.get(unit_key(s), ("",))[0] == target[0]}
        spellings = same | {unit.strip().lower()}
    return sorted(spellings, key=lambda u: (-len(u), u))


def unit_key(unit: str) -> str:
    lowered = unit.strip().lower().rstrip(".")
    return _UNIT_SPELLINGS.get(lowered, lowered)


def _format_number(number: float) -> str:
    # fixed point: ":g" would write 1000000 as "1e+06"
    return f"{round(number, 3):f}".rstrip("0").rstrip(".") or "0"


def _number(text: str) -> float | None:
    """The value of a number _NUMBER_WITH_UNIT matched ("47-1/4" -> 47.25); None for a fraction
    over zero."""
    if "/" not in text:
        return float(text.replace(",", "."))
    whole, _, fraction = text.replace("-", " ").rpartition(" ")
    numerator, denominator = (int(n) for n in fraction.split("/"))
    if denominator == 0:
        return None
    return int(whole or 0) + numerator / denominator


def normalize_number(text: str, unit: str) -> str:
    """'55 inches' with unit 'inch' -> '55 inch'; '1,5 kg' with unit 'g' -> '1500 g'; '47-1/4 in'
    with unit 'cm' -> '120.015 cm'."""
    match = _NUMBER_WITH_UNIT.match(text)
    number = _number(match.group(1)) if match else None
    if number is None:
        return text
    found = match.group(2).strip()
    if not unit:
        return f"{_format_number(number)} {found}".strip()
    if not found:
        return f"{_format_number(number)} {unit}"
    source, target = _UNIT_FACTORS.get(unit_key(found)), _UNIT_FACTORS.get(unit_key(unit))
    if unit_key(found) == unit_key(unit):
        return f"{_format_number(number)} {unit}"
    if source and target and source[0] == target[0]:
        return f"{_format_number(number * source[1] / target[1])} {unit}"
    return f"{_format_number(number)} {found}"


def normalize_value(raw: str, kind: str = TEXT, unit: str = "", allowed_values=()) -> str:
    text = " ".join(raw.split())
    if not text:
        return ""
    if text.lower() == NA:
        return NA
    if kind == NUMBER:
        return normalize_number(text, unit)
    if kind == ENUM:
        by_lower = {str(value).lower(): str(value) for value in allowed_values or ()}
        return by_lower.get(text.lower(), text)
    if kind == BOOLEAN:
        lowered = text.lower()
        if lowered in _TRUE:
            return YES
        if lowered in _FALSE:
            return NO
    return text


def checked_value(raw: str, kind: str = TEXT, unit: str = "", allowed_values=()) -> str:
    """normalize_value for a value a person typed (a correction, a blind label): the same rules,
    but what the type cannot hold is refused (ValueError saying why) rather than kept as text, so
    that no stored value breaks the constraint the decoders are held to."""
    value = normalize_value(raw, kind, unit, allowed_values)
    typed = " ".join(raw.split())
    if value in ("", NA):
        return value
    if kind == ENUM:
        allowed = [str(v) for v in allowed_values or ()]
        if value not in allowed:
            raise ValueError(f"{typed!r} is not one of {', '.join(allowed)} (or n/a)")
    elif kind == BOOLEAN and value not in BOOLEAN_VALUES:
        raise ValueError(f"{typed!r} is not yes or no (or n/a)")
    elif kind == NUMBER:
        match = _NUMBER_WITH_UNIT.match(value)
        # normalize_number writes a number it could convert in the schema's unit (a fraction it could
        # read as a decimal: "1/0" stays as typed)
        if not match or "/" in match.group(1) or (unit and unit_key(match.group(2)) != unit_key(unit)):
            in_unit = f" in {unit} (or in a unit that converts to it)" if unit else ""
            raise ValueError(f"{typed!r} is not a number{in_unit}")
    return value
