"""Ids, whole numbers and prices read from query and form parameters, parsed in one place.

Django's own form fields do the parsing: they refuse what `str.isdigit()` lets through and `int()`
then chokes on ("²"), a Decimal NaN or infinity, a fraction where a whole number belongs, and
numbers outside what PostgreSQL's columns hold. Each parser raises ParameterError with a message
that names the parameter, says what it expected and quotes what came.
"""

from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError

MAX_ID = 2**63 - 1  # PostgreSQL's bigint, the type of every primary key
MAX_PRICE = Decimal("10000")  # per hour: far above any machine's, low enough to catch a typo
PRICE_STEP = Decimal("0.01")


class ParameterError(ValueError):
    """A parameter that does not parse; the message names it and says why."""


def _parse(field: forms.Field, params, name: str, expected: str):
    raw = (params.get(name) or "").strip()
    if not raw:
        if field.required:
            raise ParameterError(f"{name}: expected {expected}, got nothing")
        return None
    try:
        return field.clean(raw)
    except ValidationError as exc:
        raise ParameterError(f"{name}: expected {expected}, got {raw!r} ({' '.join(exc.messages)})") from None


def optional_id(params, name: str) -> int | None:
    """The id of a row (1 or more), or None when the parameter is absent or blank."""
    field = forms.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    return _parse(field, params, name, "a number, the id of a row (1 or more)")


def whole_number(params, name: str, minimum: int = 0, maximum: int = MAX_ID) -> int:
    """A required whole number from `minimum` to `maximum` (a version, say)."""
    field = forms.IntegerField(min_value=minimum, max_value=maximum)
    return _parse(field, params, name, f"a whole number from {minimum} to {maximum}")


def optional_price(params, name: str) -> Decimal | None:
    """An hourly price from 0 to MAX_PRICE, rounded to the cent, or None when blank."""
    field = forms.DecimalField(required=False, min_value=0, max_value=MAX_PRICE)
    price = _parse(field, params, name, f"a price per hour from 0 to {MAX_PRICE}")
    return None if price is None else price.quantize(PRICE_STEP)


def optional_version(params, name: str) -> int | None:
    """A schema version number (1 or more), or None when blank."""
    field = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    return _parse(field, params, name, "a version number")
