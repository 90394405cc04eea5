"""Cells for CSV files people open in spreadsheets: a formula must never run.

A cell starting with =, +, -, @, a tab or a carriage return is read as a formula by Excel,
LibreOffice and Google Sheets (CSV injection, OWASP). A leading apostrophe makes it plain text.
Every CSV the product exports goes through `safe_cell` (or `safe_row`, or `csv_lines` for a
streamed download).
"""

import csv
from collections.abc import Iterable, Iterator

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def looks_like_formula(text: str) -> bool:
    """Whether a spreadsheet would read this cell as a formula (the import warns of such titles)."""
    return str(text).startswith(FORMULA_STARTS)


def safe_cell(value) -> str:
    """The value as text a spreadsheet shows as text; None becomes an empty cell."""
    if value is None:
        return ""
    text = str(value)
    if looks_like_formula(text):
        return "'" + text
    return text


def safe_row(values: Iterable) -> list[str]:
    return [safe_cell(value) for value in values]


class _Echo:
    """csv.writer target that hands each line back instead of buffering the whole file."""

    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterable[Iterable]) -> Iterator[str]:
    """Each row as one formula-safe CSV line, for a StreamingHttpResponse."""
    writer = csv.writer(_Echo())
    for row in rows:
        yield writer.writerow(safe_row(row))
