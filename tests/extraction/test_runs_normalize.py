"""Normalized values: what reviewers compare and what HPD / AR agreement is computed on; the
checked form of what a person types (a correction, a blind label)."""

import re

import pytest

from extraction.normalize import checked_value, normalize_value


@pytest.mark.parametrize(
    ("raw", "kind", "unit", "allowed", "expected"),
    [
        ("  Stacy   Adams ", "text", "", (), "Stacy Adams"),
        ("N/A", "text", "", (), "n/a"),
        (" n/a ", "number", "g", (), "n/a"),
        ("", "text", "", (), ""),
        ("55 inches", "number", "inch", (), "55 inch"),
        ('55"', "number", "in", (), "55 in"),
        ("0,25 kg", "number", "g", (), "250 g"),
        ("12 oz", "number", "g", (), "340.194 g"),
        ("500", "number", "ml", (), "500 ml"),
        ("47-1/4 in", "number", "cm", (), "120.015 cm"),  # a whole number and a fraction
        ('1 1/2"', "number", "in", (), "1.5 in"),
        ("3/4 lb", "number", "oz", (), "12 oz"),
        ("1/0 in", "number", "cm", (), "1/0 in"),  # no number: kept as written
        ("3 pack", "number", "g", (), "3 pack"),  # an unknown unit is kept, not converted
        ("about ten", "number", "g", (), "about ten"),
        ("dark ROAST", "enum", "", ["Light roast", "Dark roast"], "Dark roast"),
        ("medium", "enum", "", ["Light roast", "Dark roast"], "medium"),
        ("True", "boolean", "", (), "yes"),
        ("no", "boolean", "", (), "no"),
    ],
)
def test_it_normalizes_by_attribute_kind(raw, kind, unit, allowed, expected):
    assert normalize_value(raw, kind, unit, allowed) == expected


@pytest.mark.parametrize(
    ("raw", "kind", "unit", "allowed", "expected"),
    [
        ("dark ROAST", "enum", "", ["Light roast", "Dark roast"], "Dark roast"),
        ("N/A", "enum", "", ["Light roast"], "n/a"),
        ("Y", "boolean", "", (), "yes"),
        ("0,25 kg", "number", "g", (), "250 g"),
        ("500", "number", "ml", (), "500 ml"),
        ("1-1/2 in", "number", "cm", (), "3.81 cm"),
        ("3 pack", "number", "", (), "3 pack"),  # no schema unit: any unit is kept
        ("whatever  it says", "text", "", (), "whatever it says"),
    ],
)
def test_a_typed_value_a_person_enters_is_normalized(raw, kind, unit, allowed, expected):
    assert checked_value(raw, kind, unit, allowed) == expected


@pytest.mark.parametrize(
    ("raw", "kind", "unit", "allowed", "message"),
    [
        ("medium", "enum", "", ["Light roast", "Dark roast"], "'medium' is not one of Light roast, Dark roast (or n/a)"),
        ("perhaps", "boolean", "", (), "'perhaps' is not yes or no (or n/a)"),
        ("3 pack", "number", "g", (), "'3 pack' is not a number in g (or in a unit that converts to it)"),
        ("2 m", "number", "kg", (), "'2 m' is not a number in kg"),
        ("about ten", "number", "", (), "'about ten' is not a number"),
        ("1/0 in", "number", "cm", (), "'1/0 in' is not a number in cm"),
    ],
)  # fmt: skip
def test_a_typed_value_its_type_cannot_hold_is_refused(raw, kind, unit, allowed, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        checked_value(raw, kind, unit, allowed)
