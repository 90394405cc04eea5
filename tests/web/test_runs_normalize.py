"""Normalized values: what reviewers compare and what HPD / AR agreement is computed on."""

import pytest

from extraction.normalize import normalize_value


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
