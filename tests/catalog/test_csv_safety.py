import pytest

from catalog.csv_safety import safe_cell, safe_row


@pytest.mark.parametrize("dangerous", ["=SUM(A1)", "+1", "-2+3", "@cmd", "\tx", "\rx"])
def test_it_neutralizes_formula_cells(dangerous):
    assert safe_cell(dangerous) == "'" + dangerous


def test_it_leaves_plain_cells_alone():
    assert safe_row(["TV 55", 12, None, "a=b"]) == ["TV 55", "12", "", "a=b"]
