"""The start step: a mapped import is queued, once, for the Celery task on the light queue."""

from django.db import transaction

from catalog.imports.errors import WrongImportState
from catalog.models import ImportJob
from catalog.tasks import import_catalog_file


def do_start_import(job: ImportJob, all_or_nothing: bool = False) -> ImportJob:
    """Queue a mapped job; the task is sent only once the status change has committed.
    `all_or_nothing`: store no row if any row is bad (catalog.imports.run)."""
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job.pk)
        if job.status != ImportJob.Status.MAPPED:
            raise WrongImportState("This import has been started already.")
        job.status = ImportJob.Status.QUEUED
        job.all_or_nothing = all_or_nothing
        job.save(update_fields=["status", "all_or_nothing"])
        transaction.on_commit(lambda: import_catalog_file.apply_async(args=[job.pk], queue="light"))
    return job
