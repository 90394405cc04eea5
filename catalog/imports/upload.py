"""The upload step: check the uploaded file as a whole; only a readable CSV becomes an import job."""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from catalog.forms import MappingForm
from catalog.imports.errors import FileOverLimit
from catalog.imports.read import FileFormat, check_name, check_size, inspect_file
from catalog.models import Catalog, ImportJob


def do_create_import(upload: UploadedFile, catalog: Catalog | None, new_catalog_name: str, user) -> ImportJob:
    """Store the file as a job waiting for its mapping, in `catalog` or a new one of that name.

    Nothing is stored when the file is refused (BadFile, FileOverLimit).
    """
    check_name(upload.name)
    check_size(upload.size, settings.CATALOG_UPLOAD_MAX_BYTES)
    with _on_disk(upload) as path:
        file_format = inspect_file(path, upload.name)
    check_columns(file_format)
    with transaction.atomic():
        if catalog is None:
            catalog, _ = Catalog.objects.get_or_create(
                name=new_catalog_name.strip(), defaults={"created_by": user}
            )
        job = ImportJob(
            catalog=catalog,
            catalog_name=catalog.name,
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
        raise FileOverLimit(
            f"The file has {len(file_format.header):,} columns; at most {most:,} can be mapped in one "
            f"import (the mapping form holds one field per column and Django accepts "
            f"{settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,} fields per form). Remove the columns you do "
            "not need, or split them over two files that both keep the SKU column, and upload again."
        )


@contextmanager
def _on_disk(upload: UploadedFile) -> Iterator[Path]:
    """The upload as a file the checks can read from its path.

    Uploads over FILE_UPLOAD_MAX_MEMORY_SIZE are on disk already; a small one is written to a
    staging file, removed again when the checks are done.
    """
    if hasattr(upload, "temporary_file_path"):
        yield Path(upload.temporary_file_path())
        return
    staging = Path(settings.MEDIA_ROOT) / "staging"
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / f"{uuid.uuid4().hex}.upload"
    try:
        with open(path, "wb") as f:
            for chunk in upload.chunks():
                f.write(chunk)
        yield path
    finally:
        path.unlink(missing_ok=True)
