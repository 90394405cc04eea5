"""Catalog upkeep from the UI: removing an import that will not finish, and a catalog with no products.

Both remove only what they name. A finished import is the catalog's history and stays; products are
never removed here (a catalog that holds any is refused). An import a worker is writing right now
holds its catalog's row lock for its whole transaction (catalog.imports.run), so a lock that cannot
be taken at once means "running, not stalled": refused, nothing changed.
"""

import logging

from django.db import DatabaseError, transaction
from django.db.models import ProtectedError

from catalog.models import Catalog, ImportJob

log = logging.getLogger(__name__)


class UpkeepRefused(ValueError):
    """The removal would lose something or disturb a running import; the message says what."""


def _no_import_running(catalog_id: int, what: str) -> None:
    """Take the catalog's row lock without waiting: held means an import is writing into it."""
    try:
        Catalog.objects.select_for_update(nowait=True).filter(pk=catalog_id).first()
    except DatabaseError:
        raise UpkeepRefused(
            f"{what}: an import is writing into this catalog right now; wait until it ends"
        ) from None


def _delete_file_after_commit(job: ImportJob) -> None:
    if job.file.name:
        storage, name = job.file.storage, job.file.name
        transaction.on_commit(lambda: storage.delete(name))


def do_remove_import(job_id: int) -> ImportJob:
    """Remove an import that has not finished (left before its start, queued, or stopped while
    running) or that failed, with its stored file and row errors; the catalog's products stay."""
    with transaction.atomic():
        job = ImportJob.objects.select_for_update(of=("self",)).select_related("catalog").get(pk=job_id)
        if job.status == ImportJob.Status.DONE:
            raise UpkeepRefused(
                f"{job.original_name} was imported: its products are in {job.catalog_label} and the import "
                "is their record; nothing was removed"
            )
        if job.status == ImportJob.Status.RUNNING:
            _no_import_running(job.catalog_id, f"{job.original_name} was not removed")
        _delete_file_after_commit(job)
        job.delete()
    log.info(
        "removed import %s (%s, %s) of catalog %s", job_id, job.original_name, job.status, job.catalog_label
    )
    return job


def do_remove_catalog(catalog_id: int) -> Catalog:
    """Remove a catalog that holds no product, with its unfinished or failed imports and their files.
    Runs that named it keep their values (their catalog reads as none)."""
    with transaction.atomic():
        catalog = Catalog.objects.filter(pk=catalog_id).first()
        if catalog is None:
            raise UpkeepRefused("that catalog is gone already")
        _no_import_running(catalog.pk, f"{catalog.name} was not removed")
        products = catalog.products.count()
        if products:
            raise UpkeepRefused(
                f"{catalog.name} holds {products:,} product{'s' if products != 1 else ''}: only an empty "
                "catalog can be removed; nothing was removed"
            )
        if catalog.imports.filter(status=ImportJob.Status.DONE, created_count__gt=0).exists():
            raise UpkeepRefused(f"{catalog.name} has imports that stored products; nothing was removed")
        for job in catalog.imports.all():
            _delete_file_after_commit(job)
        try:
            catalog.delete()
        except ProtectedError as exc:  # say, an A/B system's imported outputs name it
            kept = sorted({str(obj) for obj in exc.protected_objects})
            raise UpkeepRefused(f"{catalog.name} is used by {', '.join(kept)}; nothing was removed") from None
    log.info("removed empty catalog %s (%s)", catalog_id, catalog.name)
    return catalog
