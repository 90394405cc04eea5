"""The run step: the Celery task runs a queued import to the end (catalog.tasks calls run_import).

The whole file is one transaction: if anything fails midway (the database goes away, the file
cannot be read) nothing of this import is stored, and the job says why it failed. The file is read
from where the upload step stored it (PostgreSQL, filestore/), so the worker needs no disk in common
with the web server.
"""

import logging
from functools import partial

from django.db import DatabaseError, connection, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from catalog.imports.errors import BadFile
from catalog.imports.map import Mapping
from catalog.imports.progress import ProgressWriter
from catalog.imports.read import count_rows
from catalog.imports.write import Counts, import_file, save_errors
from catalog.models import Catalog, Category, ImportJob, ImportRowError
from catalog.schemas import do_fit_budgets, resized_text

logger = logging.getLogger(__name__)


def run_import(job_id: int) -> ImportJob | None:
    """Run a queued import to the end; the job records the summary or why it failed."""
    job = ImportJob.objects.filter(pk=job_id).select_related("catalog").first()
    if job is None or job.status not in {ImportJob.Status.QUEUED, ImportJob.Status.RUNNING}:
        return job
    try:
        total = count_rows(job.open_file, job.file_format)
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
            write = partial(
                import_file,
                job.open_file,
                job.file_format,
                Mapping.from_json(job.mapping),
                job.catalog_id,
                on_errors=lambda errors, cells: save_errors(job, errors, cells),
                progress=progress,
            )
            if job.all_or_nothing:
                # the whole file is checked before any row is written: one bad row, and none is stored
                checked = write(write=False)
                if checked.skipped:
                    return _refuse(job, total, checked)
            counts = write()
            notes = _fit_budgets(job, counts) + ([] if counts.stored else _drop_empty_catalog(job))
            ImportJob.objects.filter(pk=job_id).update(
                status=ImportJob.Status.DONE,
                processed_rows=total,
                created_count=counts.created,
                updated_count=counts.updated,
                skipped_count=counts.skipped,
                message=" ".join(notes),
                finished_at=timezone.now(),
            )
            # Every row now lives in the products or in the error report; the upload is no longer
            # needed. It is a row in PostgreSQL (filestore/), so it goes in the same commit as the
            # summary: nobody sees a finished import whose upload is still stored, or the reverse.
            job.file.delete(save=False)
    except (DatabaseError, OSError, UnicodeDecodeError) as exc:
        logger.exception("import %s failed; its transaction was rolled back", job_id)
        return _fail(job_id, f"The import stopped midway and nothing was stored: {exc}".strip())
    return ImportJob.objects.get(pk=job_id)


def _fit_budgets(job: ImportJob, counts: Counts) -> list[str]:
    """Grow the attributes of the categories the import wrote whose new values need more room
    (catalog.schemas.do_fit_budgets), so a run never starts by cutting the values the catalog
    holds; one sentence per category grown, for the import's summary."""
    notes = []
    for category in Category.objects.filter(pk__in=counts.categories).order_by("name"):
        fitted = do_fit_budgets(category, job.created_by, f"Sized to the values of import {job.pk}")
        if fitted is not None:
            notes.append(f"{fitted.version}: {resized_text(fitted.resized)}.")
    if notes:
        notes.insert(0, "Attributes grew to fit the imported values (a value longer than its slot is cut):")
    return notes


def _drop_empty_catalog(job: ImportJob) -> list[str]:
    """An import that stored nothing removes the catalog it was made for, when that catalog holds
    nothing else (no product, no other import, nothing that names it): no empty catalog is left for
    someone to find and wonder about. The job stays, naming it (ImportJob.catalog_name)."""
    catalog = job.catalog
    if catalog.products.exists() or catalog.imports.exclude(pk=job.pk).exists():
        return []
    try:
        with transaction.atomic():
            ImportJob.objects.filter(pk=job.pk).update(catalog=None, catalog_name=catalog.name)
            catalog.delete()
    except ProtectedError:  # an A/B system's imported outputs name it: it stays
        return []
    return [f"The catalog {catalog.name} held nothing else and was removed; upload into a new one again."]


def _refuse(job: ImportJob, total: int, checked: Counts) -> ImportJob:
    """An all-or-nothing import with bad rows: no product stored, the errors kept for the report.
    Its good rows are not counted anywhere: none of them was stored either."""
    bad = checked.skipped
    removed = _drop_empty_catalog(job)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.FAILED,
        message=(
            f"Nothing was stored: you chose all or nothing, and {bad:,} of {total:,} rows "
            f"{'is' if bad == 1 else 'are'} bad (listed below by row and column). Fix "
            f"{'it' if bad == 1 else 'them'} and upload the file again, or import without all or nothing "
            "to store the good rows." + (f" {removed[0]}" if removed else "")
        ),
        processed_rows=total,
        created_count=0,
        updated_count=0,
        skipped_count=bad,
        finished_at=timezone.now(),
    )
    # every bad row is in the error report with its cells; the upload goes in the same commit
    job.file.delete(save=False)
    return ImportJob.objects.get(pk=job.pk)


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
