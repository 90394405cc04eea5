"""Removing uploads nobody finished: an import job left at upload or mapping keeps its CSV on disk
until it is imported, so one abandoned at that step would keep its file forever."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog.models import ImportJob, RemovedUpload

log = logging.getLogger(__name__)

# The steps before the import is queued: the user has not asked for the file to be imported yet.
STRANDED = (ImportJob.Status.UPLOADED, ImportJob.Status.MAPPED)


def remove_stranded_uploads(max_age: timedelta | None = None, now=None) -> list[RemovedUpload]:
    """Delete the import jobs left at upload or mapping for longer than `max_age` (by default
    STRANDED_UPLOAD_MAX_AGE_HOURS), with their files; each removal is recorded as a RemovedUpload."""
    max_age = max_age or timedelta(hours=settings.STRANDED_UPLOAD_MAX_AGE_HOURS)
    cutoff = (now or timezone.now()) - max_age
    candidates = ImportJob.objects.filter(status__in=STRANDED, created_at__lt=cutoff).values_list(
        "pk", flat=True
    )
    return [removed for job_id in list(candidates) if (removed := _remove(job_id, cutoff)) is not None]


def _remove(job_id: int, cutoff) -> RemovedUpload | None:
    with transaction.atomic():
        # Locked, and checked again: a user who starts this import right now wins, and it is kept.
        job = (
            ImportJob.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("catalog", "created_by")
            .filter(pk=job_id, status__in=STRANDED, created_at__lt=cutoff)
            .first()
        )
        if job is None:
            return None
        removed = RemovedUpload.objects.create(
            job_id=job.pk,
            catalog_name=job.catalog.name if job.catalog_id else job.catalog_name,
            original_name=job.original_name,
            file_name=job.file.name,
            size_bytes=job.size_bytes,
            status=job.status,
            uploaded_by=job.created_by.get_username() if job.created_by else "",
            uploaded_at=job.created_at,
        )
        storage, file_name = job.file.storage, job.file.name
        job.delete()
        # The file goes once the row is gone for good: a rolled-back removal keeps both.
        transaction.on_commit(lambda: storage.delete(file_name))
    log.info(
        "removed upload %s (import %s, left at %s since %s)",
        file_name,
        job_id,
        removed.status,
        removed.uploaded_at,
    )
    return removed
