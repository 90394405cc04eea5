"""Upload actions: accept a file, save its mapping, preview it, queue the background import."""

import uuid
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.db import transaction

from catalog.csv_files import BadFile, FileFormat, check_name, check_size, inspect_file, read_rows
from catalog.forms import MappingForm
from catalog.import_mapping import REQUIRED_FIELDS, Mapping
from catalog.import_rows import CleanRow, RowChecker, RowError, load_categories
from catalog.importer import file_format_of
from catalog.models import Catalog, ImportJob
from catalog.tasks import import_catalog_file

PREVIEW_ROWS = 20
PREVIEW_CHECK_ROWS = 10_000
PREVIEW_ERRORS_SHOWN = 200


def do_create_import(upload, catalog: Catalog | None, new_catalog_name: str, user) -> ImportJob:
    """Check the uploaded file as a whole; only a readable CSV becomes an import job.

    `upload` is Django's UploadedFile. Nothing is stored when the file is bad (BadFile).
    """
    check_name(upload.name)
    check_size(upload.size, settings.CATALOG_UPLOAD_MAX_BYTES)
    path = _local_path(upload)
    try:
        file_format = inspect_file(path, upload.name)
    finally:
        discard_staging(upload)
    check_columns(file_format)
    with transaction.atomic():
        if catalog is None:
            catalog, _ = Catalog.objects.get_or_create(
                name=new_catalog_name.strip(), defaults={"created_by": user}
            )
        job = ImportJob(
            catalog=catalog,
            original_name=Path(upload.name).name[:255],
            size_bytes=upload.size,
            encoding=file_format.encoding,
            delimiter=file_format.delimiter,
            header=file_format.header,
            created_by=user,
        )
        upload.seek(0)
        job.file.save(f"{uuid.uuid4().hex}.csv", File(upload), save=False)
        job.save()
    return job


def check_columns(file_format: FileFormat) -> None:
    """Refuse a file too wide to map at upload, so its import job is never left stranded."""
    most = MappingForm.max_columns()
    if most is not None and len(file_format.header) > most:
        raise BadFile(
            f"The file has {len(file_format.header):,} columns; at most {most:,} can be mapped in one "
            f"import (the mapping form holds one field per column and Django accepts "
            f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields per form). Remove the columns you do "
            "not need, or split them over two files that both keep the SKU column, and upload again."
        )


def _local_path(upload) -> Path:
    """Uploads over FILE_UPLOAD_MAX_MEMORY_SIZE are on disk already; small ones go to a temp file."""
    if hasattr(upload, "temporary_file_path"):
        return Path(upload.temporary_file_path())
    staging = Path(settings.MEDIA_ROOT) / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / f"{uuid.uuid4().hex}.upload"
    with open(path, "wb") as f:
        for chunk in upload.chunks():
            f.write(chunk)
    upload._slotwise_staging_path = path
    return path


def discard_staging(upload) -> None:
    path = getattr(upload, "_slotwise_staging_path", None)
    if path is not None:
        path.unlink(missing_ok=True)


def check_mapping(mapping: Mapping) -> list[str]:
    problems = []
    for required in REQUIRED_FIELDS:
        if getattr(mapping, required) is None:
            problems.append(f"Missing required column: choose the column that holds the {required}.")
    if mapping.category is None and mapping.fixed_category_id is None:
        problems.append("Missing required column: choose the category column, or one category for all rows.")
    fields = [i for i in (mapping.sku, mapping.title, mapping.description, mapping.category) if i is not None]
    if len(fields) != len(set(fields)):
        problems.append("One column is mapped to two product fields.")
    return problems


def do_save_mapping(job: ImportJob, mapping: Mapping) -> None:
    problems = check_mapping(mapping)
    if problems:
        raise BadFile(" ".join(problems))
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job.pk)
        if job.status not in {ImportJob.Status.UPLOADED, ImportJob.Status.MAPPED}:
            raise BadFile("This import has started already; its mapping can no longer change.")
        job.mapping = mapping.to_json()
        job.status = ImportJob.Status.MAPPED
        job.save(update_fields=["mapping", "status"])


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
    """The first rows as they will be imported, and the row errors of the first rows checked."""
    checker = RowChecker(job.header, Mapping.from_json(job.mapping), load_categories())
    preview = Preview()
    rows = read_rows(Path(job.file.path), file_format_of(job))
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


def do_start_import(job: ImportJob) -> ImportJob:
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job.pk)
        if job.status != ImportJob.Status.MAPPED:
            raise BadFile("This import has been started already.")
        job.status = ImportJob.Status.QUEUED
        job.save(update_fields=["status"])
        transaction.on_commit(lambda: import_catalog_file.apply_async(args=[job.pk], queue="light"))
    return job
