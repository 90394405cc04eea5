"""The write step: stream the file, check each row, upsert products in batches.

Speed comes from COPY into a temporary table and one INSERT ... ON CONFLICT per batch, so
PostgreSQL does the matching by (catalog, sku); memory stays flat because rows stream from the
file and only one batch is held at a time. `import_file` runs inside its caller's transaction
(catalog.imports.run makes the whole file one), so a failure midway stores nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection

from catalog.imports.check import CleanRow, RowChecker, RowError, load_categories
from catalog.imports.map import Mapping
from catalog.imports.progress import ProgressWriter
from catalog.imports.read import FileFormat, Source, read_rows
from catalog.models import ImportJob, ImportRowError, Product

BATCH_ROWS = 2000

STAGING_TABLE = "slotwise_import_batch"
# Rows reach PostgreSQL through COPY into a temporary table (fast, no per-value quoting in
# Python), then one statement upserts the batch by (catalog, sku).
CREATE_STAGING_SQL = f"""
CREATE TEMPORARY TABLE IF NOT EXISTS {STAGING_TABLE}
    (sku text, title text, description text, category_id bigint, known jsonb) ON COMMIT DROP
"""
COPY_SQL = f"COPY {STAGING_TABLE} (sku, title, description, category_id, known) FROM STDIN"
UPSERT_SQL = f"""
INSERT INTO {Product._meta.db_table}
    (catalog_id, sku, title, description, category_id, known_values, created_at, updated_at)
SELECT %(catalog_id)s, b.sku, b.title, b.description, b.category_id, b.known, now(), now()
FROM {STAGING_TABLE} b
ON CONFLICT (catalog_id, sku) DO UPDATE SET
    title = EXCLUDED.title,
    description = CASE WHEN %(has_description)s THEN EXCLUDED.description
                       ELSE {Product._meta.db_table}.description END,
    category_id = EXCLUDED.category_id,
    known_values = {Product._meta.db_table}.known_values || EXCLUDED.known_values,
    updated_at = now()
RETURNING (xmax = 0)
"""  # noqa: S608 (table names only; every value is a parameter)


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    skipped: int = 0
    categories: set[int] = field(default_factory=set)  # of the rows written (or, checking only, good)

    @property
    def stored(self) -> int:
        return self.created + self.updated


def _upsert(catalog_id: int, rows: list[CleanRow], has_description: bool) -> tuple[int, int]:
    """Write one batch; returns (created, updated). Runs inside the import's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(CREATE_STAGING_SQL)
        with cursor.cursor.copy(COPY_SQL) as copy:  # the psycopg cursor under Django's wrapper
            for r in rows:
                copy.write_row((r.sku, r.title, r.description, r.category_id, r.known_json()))
        cursor.execute(UPSERT_SQL, {"catalog_id": catalog_id, "has_description": has_description})
        inserted = [flag for (flag,) in cursor.fetchall()]
        cursor.execute(f"TRUNCATE {STAGING_TABLE}")
    created = sum(inserted)
    return created, len(inserted) - created


def save_errors(job: ImportJob, errors: list[RowError], cells_by_row: dict[int, list[str]]) -> None:
    """The skipped rows of one batch, with the cells they had, as the job's error report."""
    ImportRowError.objects.bulk_create(
        ImportRowError(
            job=job,
            row_number=e.row,
            sku=e.sku,
            column=e.column[:200],
            reason=e.reason[:500],
            cells=cells_by_row.get(e.row, []),
        )
        for e in errors
    )


def import_file(
    path: Source,
    file_format: FileFormat,
    mapping: Mapping,
    catalog_id: int,
    on_errors: Callable[[list[RowError], dict[int, list[str]]], None] | None = None,
    progress: ProgressWriter | None = None,
    write: bool = True,
) -> Counts:
    """Write every good row of the file into the catalog; call inside a transaction.

    Bad rows are skipped and handed to `on_errors` in batches with the cells they had. With
    write=False the rows are only checked (an all-or-nothing import's first pass): counts.created
    then counts the good rows, and nothing is written but the errors.
    """
    checker = RowChecker(file_format.header, mapping, load_categories())
    counts = Counts()
    batch: list[CleanRow] = []
    errors: list[RowError] = []
    error_cells: dict[int, list[str]] = {}
    processed = 0

    def flush():
        counts.categories.update(r.category_id for r in batch)
        if batch and not write:
            counts.created += len(batch)
            batch.clear()
        if batch:
            created, updated = _upsert(catalog_id, batch, mapping.description is not None)
            counts.created += created
            counts.updated += updated
            batch.clear()
        if errors:
            if on_errors:
                on_errors(errors, error_cells)
            errors.clear()
            error_cells.clear()
        if progress:
            progress.report(processed)

    for row, cells in read_rows(path, file_format):
        clean, row_errors = checker.check(row, cells)
        processed += 1
        if clean is None:
            counts.skipped += 1
            errors.extend(row_errors)
            error_cells[row] = cells
        else:
            batch.append(clean)
        if len(batch) >= BATCH_ROWS or len(errors) >= BATCH_ROWS:
            flush()
    flush()
    return counts
