"""The preview step: the first rows as they will be imported, and the errors of the rows checked."""

from dataclasses import dataclass, field
from itertools import islice

from catalog.imports.check import CleanRow, RowChecker, RowError, load_categories
from catalog.imports.map import Mapping
from catalog.imports.read import read_rows
from catalog.models import ImportJob

PREVIEW_ROWS = 20
PREVIEW_CHECK_ROWS = 10_000
PREVIEW_ERRORS_SHOWN = 200


@dataclass
class PreviewRow:
    row: int
    cells: list[str]
    clean: CleanRow | None
    errors: list[RowError]


@dataclass
class Preview:
    rows: list[PreviewRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    error_count: int = 0
    bad_rows: int = 0
    checked_rows: int = 0
    complete: bool = True


def build_preview(job: ImportJob) -> Preview:
    """The first PREVIEW_ROWS rows, and the row errors of the first PREVIEW_CHECK_ROWS checked."""
    checker = RowChecker(job.header, Mapping.from_json(job.mapping), load_categories())
    preview = Preview()
    rows = read_rows(job.open_file, job.file_format)
    for row, cells in islice(rows, PREVIEW_CHECK_ROWS):
        clean, errors = checker.check(row, cells)
        preview.checked_rows += 1
        if errors:
            preview.bad_rows += 1
            preview.error_count += len(errors)
            room = PREVIEW_ERRORS_SHOWN - len(preview.errors)
            preview.errors.extend(errors[: max(room, 0)])
        if len(preview.rows) < PREVIEW_ROWS:
            preview.rows.append(PreviewRow(row, cells, clean, errors))
    preview.complete = next(rows, None) is None
    return preview
