"""Cells for CSV files people open in spreadsheets: a formula must never run.

A cell starting with =, +, -, @, a tab or a carriage return is read as a formula by Excel,
LibreOffice and Google Sheets (CSV injection, OWASP). A leading apostrophe makes it plain text.
Every CSV the product exports goes through `safe_cell` (or `safe_row`).
"""

from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value) -> str:
    """The value as text a spreadsheet shows as text; None becomes an empty cell."""
    if value is None:
        return ""
    text = str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def safe_row(values: Iterable) -> list[str]:
    return [safe_cell(value) for value in values]
