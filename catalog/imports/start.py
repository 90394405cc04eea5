"""The start step: a mapped import is queued, once, for the Celery task on the light queue."""

from django.db import transaction

from catalog.imports.errors import WrongImportState
from catalog.models import ImportJob
from catalog.tasks import import_catalog_file


def do_start_import(job: ImportJob) -> ImportJob:
    """Queue a mapped job; the task is sent only once the status change has committed."""
    with transaction.atomic():
        job = ImportJob.objects.select_for_update().get(pk=job.pk)
        if job.status != ImportJob.Status.MAPPED:
            raise WrongImportState("This import has been started already.")
        job.status = ImportJob.Status.QUEUED
        job.save(update_fields=["status"])
        transaction.on_commit(lambda: import_catalog_file.apply_async(args=[job.pk], queue="light"))
    return job
