"""The bulk import: stream the file, check each row, upsert products in batches, all or nothing.

Speed comes from one INSERT ... ON CONFLICT per batch of rows, passed as arrays (unnest), so
PostgreSQL does the matching by (catalog, sku); memory stays flat because rows stream from the
file and only one batch is held at a time. The whole file is one transaction: if anything fails
midway (the database goes away, the disk fails) nothing of this import is stored.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from catalog.csv_files import BadFile, FileFormat, count_rows, read_rows
from catalog.import_mapping import Mapping
from catalog.import_progress import ProgressWriter
from catalog.import_rows import CleanRow, RowChecker, RowError, load_categories
from catalog.models import Catalog, ImportJob, ImportRowError, Product

logger = logging.getLogger(__name__)

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


def file_format_of(job: ImportJob) -> FileFormat:
    return FileFormat(encoding=job.encoding, delimiter=job.delimiter, header=job.header)


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


def _save_errors(job: ImportJob, errors: list[RowError], cells_by_row: dict[int, list[str]]) -> None:
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
    path: Path,
    file_format: FileFormat,
    mapping: Mapping,
    catalog_id: int,
    on_errors: Callable[[list[RowError], dict[int, list[str]]], None] | None = None,
    progress: ProgressWriter | None = None,
) -> Counts:
    """Write every good row of the file into the catalog; call inside a transaction.

    Bad rows are skipped and handed to `on_errors` in batches with the cells they had.
    """
    checker = RowChecker(file_format.header, mapping, load_categories())
    counts = Counts()
    batch: list[CleanRow] = []
    errors: list[RowError] = []
    error_cells: dict[int, list[str]] = {}
    processed = 0

    def flush():
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


def run_import(job_id: int) -> ImportJob | None:
    """Run a queued import to the end; the job records the summary or why it failed."""
    job = ImportJob.objects.filter(pk=job_id).select_related("catalog").first()
    if job is None or job.status not in {ImportJob.Status.QUEUED, ImportJob.Status.RUNNING}:
        return job
    try:
        total = count_rows(Path(job.file.path), file_format_of(job))
    except (OSError, UnicodeDecodeError, BadFile) as exc:
        return _fail(job_id, f"The file could not be read again: {exc}")
    ImportJob.objects.filter(pk=job_id).update(
        status=ImportJob.Status.RUNNING, started_at=timezone.now(), total_rows=total, processed_rows=0
    )
    try:
        with ProgressWriter(job_id) as progress, transaction.atomic():
            # One import per catalog at a time: a second one waits here instead of interleaving.
            Catalog.objects.select_for_update().get(pk=job.catalog_id)
            ImportRowError.objects.filter(job_id=job_id).delete()
            counts = import_file(
                Path(job.file.path),
                file_format_of(job),
                Mapping.from_json(job.mapping),
                job.catalog_id,
                on_errors=lambda errors, cells: _save_errors(job, errors, cells),
                progress=progress,
            )
            ImportJob.objects.filter(pk=job_id).update(
                status=ImportJob.Status.DONE,
                processed_rows=total,
                created_count=counts.created,
                updated_count=counts.updated,
                skipped_count=counts.skipped,
                finished_at=timezone.now(),
            )
    except (DatabaseError, OSError, UnicodeDecodeError) as exc:
        logger.exception("import %s failed; its transaction was rolled back", job_id)
        return _fail(job_id, f"The import stopped midway and nothing was stored: {exc}".strip())
    # Every row now lives in the products or in the error report; the upload is no longer needed.
    job.file.delete(save=False)
    return ImportJob.objects.get(pk=job_id)


def _fail(job_id: int, message: str) -> ImportJob | None:
    # The failed transaction may have taken the connection with it; start from a fresh one.
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
    ImportJob.objects.filter(pk=job_id).update(
        status=ImportJob.Status.FAILED,
        message=message[:2000],
        processed_rows=0,
        created_count=0,
        updated_count=0,
        skipped_count=0,
        finished_at=timezone.now(),
    )
    return ImportJob.objects.filter(pk=job_id).first()
