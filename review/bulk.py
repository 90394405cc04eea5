"""Bulk accept or reject over everything a queue filter matches, not only the visible page.

Small selections run inside the request; larger ones become a BulkAction the `light` Celery queue
works through in chunks, one transaction per chunk, so progress shows and a crash loses at most
the chunk in hand (running it again only touches what is still left).
Human corrections are never overwritten by a bulk action, and values already in the target state
are left alone; a bulk accept leaves values cut by the token budget for a person. A value is
changed only at the version the job read when it started: one someone else changed since (a second
bulk action on the same values included) is theirs, and the job skips and counts it.
The filter may bound the confidence: auto-accept ("accept every pending value with confidence at
least t") is a bulk accept whose filter says status=pending, min_confidence=t.
A job that fails is marked failed with its error, inline or in the background (run_or_mark_failed).
"""

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from review.actions import review_locked
from review.filters import QueueFilter
from review.models import BulkAction, ValueEvent, ValueReview
from review.transition import ReviewConflict, locked_values

log = logging.getLogger(__name__)

EVENT = {
    BulkAction.Action.ACCEPT: ValueEvent.Action.BULK_ACCEPT,
    BulkAction.Action.REJECT: ValueEvent.Action.BULK_REJECT,
}


def chunk_size() -> int:
    """Values changed per transaction: small enough to keep locks short, large enough to be quick."""
    return settings.REVIEW_BULK_CHUNK


def inline_limit() -> int:
    """Up to this many values a bulk action runs within the request; beyond, in the background."""
    return settings.REVIEW_BULK_INLINE_LIMIT


def candidates(queue_filter: QueueFilter, action: str):
    """The values a bulk `action` would change under `queue_filter`."""
    return queue_filter.values().filter(ValueReview.bulk_changeable(action))


def do_create_bulk_action(queue_filter: QueueFilter, action: str, user) -> BulkAction:
    if action not in EVENT:
        raise ValueError(f"action: {action!r} is not one of {', '.join(EVENT)}")
    return BulkAction.objects.create(
        created_by=user,
        action=action,
        filters=queue_filter.as_params(),
        total=candidates(queue_filter, action).count(),
    )


def _apply_chunk(job: BulkAction, seen: dict[int, int]) -> tuple[int, int]:
    """Change the values of `seen` (id -> the version the job read) still eligible and unchanged
    since; returns (changed, skipped). One transaction.

    Each value goes through review_locked and so review/transition.py, as a single review does, so
    history and gold follow one rule whichever way a value was reviewed.
    """
    changed = 0
    with transaction.atomic():
        rows = locked_values().filter(ValueReview.bulk_changeable(job.action), pk__in=seen).order_by("pk")
        for value in rows:
            try:
                review_locked(
                    value,
                    seen[value.pk],
                    job.action,
                    job.created_by,
                    recorded_as=EVENT[job.action],
                    bulk=job,
                )
            except ReviewConflict:
                # Changed by someone since the job read it (the lock waited for their commit): theirs
                # stands. transition() raises before it writes, so the chunk's other changes go on.
                continue
            changed += 1
    return changed, len(seen) - changed


def run_bulk_action(job_id: int) -> BulkAction | None:
    """Work through a bulk action chunk by chunk, saving progress after each. Safe to rerun."""
    job = BulkAction.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job
    BulkAction.objects.filter(pk=job.pk).update(status=BulkAction.Status.RUNNING)
    # (id, version) of each value as the job finds it: what it may change, and at which version.
    seen = list(
        candidates(QueueFilter.from_params(job.filters), job.action)
        .order_by("pk")
        .values_list("pk", "review__version")
    )
    # The count may have moved since the job was made; progress is measured against what is left.
    done = changed = skipped = 0
    BulkAction.objects.filter(pk=job.pk).update(total=len(seen), done=0)
    size = chunk_size()
    for start in range(0, len(seen), size):
        chunk = dict(seen[start : start + size])
        c, s = _apply_chunk(job, chunk)
        done, changed, skipped = done + len(chunk), changed + c, skipped + s
        BulkAction.objects.filter(pk=job.pk).update(done=done, changed=changed, skipped=skipped)
    BulkAction.objects.filter(pk=job.pk).update(status=BulkAction.Status.DONE, finished_at=timezone.now())
    job.refresh_from_db()
    return job


def run_or_mark_failed(job_id: int) -> BulkAction | None:
    """run_bulk_action; when it raises, the job is marked failed with the error instead of being left
    running, and the chunks committed before stay. The request and the Celery task both run jobs so."""
    try:
        return run_bulk_action(job_id)
    except Exception as exc:  # noqa: BLE001 - the job must say it failed, whatever the cause
        log.exception("bulk action %s failed", job_id)
        mark_failed(job_id, f"{type(exc).__name__}: {exc}")
        return BulkAction.objects.filter(pk=job_id).first()


def mark_failed(job_id: int, error: str) -> None:
    BulkAction.objects.filter(pk=job_id).update(
        status=BulkAction.Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )
