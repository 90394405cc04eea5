"""Ids, whole numbers, fractions and prices read from query and form parameters, parsed in one place.

Only ASCII digits make a number here. `str.isdigit()` is true for "²" and "①", which `int()` then
refuses (a server error where a 400 belonged), and `int()`, `float()`, `Decimal()` and Django's
number fields take "１" or "٣" for a digit (the forms' number fields: slotwise/number_fields.py). A
number outside what PostgreSQL's columns hold, a fraction where a whole number belongs, NaN and
infinity are refused too. Each parser raises ParameterError with a message that names the
parameter, says what it expected and quotes what came; a view reads all its parameters before it
writes anything.
"""

import math
import re
from decimal import Decimal

MAX_ID = 2**63 - 1  # PostgreSQL's bigint, the type of every primary key
MAX_VERSION = 2**31 - 1  # PostgreSQL's integer, the type of a schema's version number
MAX_PRICE = Decimal("10000")  # per hour: far above any machine's, low enough to catch a typo
PRICE_STEP = Decimal("0.01")

# At most 30 digits: more than any column holds, and short enough that int() is quick on it.
WHOLE_NUMBER = re.compile(r"-?[0-9]{1,30}")
PRICE = re.compile(r"[0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30}")
# A fraction as people type it and as repr(float) writes it ("0.5", ".5", "1e-05"); not "nan", "inf"
# or "1_0", which float() also reads.
NUMBER = re.compile(r"-?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30})([eE][-+]?[0-9]{1,3})?")
LIST_SEPARATOR = ","


class ParameterError(ValueError):
    """A parameter that does not parse; the message names it and says why."""


def _text(params, name: str) -> str:
    return (params.get(name) or "").strip()


def parse_whole_number(
    raw: str, name: str, minimum: int = 0, maximum: int = MAX_ID, expected: str = ""
) -> int:
    """`raw` as a whole number from `minimum` to `maximum`; `expected` says what it is for in the
    message (by default, the range). For text that is not a parameter of its own: a page cursor,
    one item of a list."""
    expected = expected or f"a whole number from {minimum} to {maximum}"
    if WHOLE_NUMBER.fullmatch(raw):
        number = int(raw)
        if minimum <= number <= maximum:
            return number
    raise ParameterError(f"{name}: expected {expected}, got {raw!r}")


def parse_number(raw: str, name: str, expected: str = "a number") -> float:
    """`raw` as a finite float; `expected` says what it is for in the message. Its range is the
    caller's to check (a confidence, a percentage, a page cursor's sort value)."""
    if NUMBER.fullmatch(raw):
        number = float(raw)
        if math.isfinite(number):  # "1e999" overflows to infinity
            return number
    raise ParameterError(f"{name}: expected {expected}, got {raw!r}")


def optional_id(params, name: str) -> int | None:
    """The id of a row (1 or more), or None when the parameter is absent or blank."""
    raw = _text(params, name)
    expected = "a number, the id of a row (1 or more)"
    return parse_whole_number(raw, name, 1, MAX_ID, expected) if raw else None


def optional_ids(params, name: str) -> set[int]:
    """Row ids separated by commas ("12,13,40"); none when the parameter is absent or blank."""
    raw = _text(params, name)
    if not raw:
        return set()
    try:
        return {parse_whole_number(item.strip(), name, 1) for item in raw.split(LIST_SEPARATOR)}
    except ParameterError:
        expected = "the ids of rows (1 or more) separated by commas"
        raise ParameterError(f"{name}: expected {expected}, got {raw!r}") from None


def whole_number(params, name: str, minimum: int = 0, maximum: int = MAX_ID) -> int:
    """A required whole number from `minimum` to `maximum` (a version, say)."""
    raw = _text(params, name)
    if not raw:
        raise ParameterError(f"{name}: expected a whole number from {minimum} to {maximum}, got nothing")
    return parse_whole_number(raw, name, minimum, maximum)


def choice(params, name: str, choices, default: str) -> str:
    """One of `choices` (a filter's fixed values, say), or `default` when the parameter is absent or blank."""
    raw = _text(params, name)
    if not raw:
        return default
    if raw in choices:
        return raw
    raise ParameterError(f"{name}: expected one of {', '.join(choices)}, got {raw!r}")


def optional_version(params, name: str) -> int | None:
    """A schema version number (1 or more), or None when blank."""
    raw = _text(params, name)
    return parse_whole_number(raw, name, 1, MAX_VERSION, "a version number") if raw else None


def optional_price(params, name: str) -> Decimal | None:
    """An hourly price from 0 to MAX_PRICE, rounded to the cent, or None when blank."""
    raw = _text(params, name)
    if not raw:
        return None
    if PRICE.fullmatch(raw):
        price = Decimal(raw)
        if price <= MAX_PRICE:
            return price.quantize(PRICE_STEP)
    raise ParameterError(f"{name}: expected a price per hour from 0 to {MAX_PRICE}, got {raw!r}")
