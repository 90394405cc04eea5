"""Bulk accept or reject over everything a queue filter matches, not only the visible page.

Small selections run inside the request; larger ones become a BulkAction the `light` Celery queue
works through in chunks, one transaction per chunk, so progress shows and a crash loses at most
the chunk in hand (running it again only touches what is still left).
Human corrections are never overwritten by a bulk action, and values already in the target state
are left alone.
"""

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from extraction.models import ExtractedValue
from review.actions import shown_value
from review.filters import QueueFilter
from review.gold import sync_gold
from review.models import BulkAction, GoldValue, ValueEvent

Status = ExtractedValue.ReviewStatus
TARGET = {BulkAction.Action.ACCEPT: Status.ACCEPTED, BulkAction.Action.REJECT: Status.REJECTED}
EVENT = {
    BulkAction.Action.ACCEPT: ValueEvent.Action.BULK_ACCEPT,
    BulkAction.Action.REJECT: ValueEvent.Action.BULK_REJECT,
}


def chunk_size() -> int:
    """Values changed per transaction: small enough to keep locks short, large enough to be quick."""
    return getattr(settings, "REVIEW_BULK_CHUNK", 500)


def inline_limit() -> int:
    """Up to this many values a bulk action runs within the request; beyond, in the background."""
    return getattr(settings, "REVIEW_BULK_INLINE_LIMIT", 1000)


def candidates(queue_filter: QueueFilter, action: str):
    """The values a bulk `action` would change under `queue_filter`."""
    return queue_filter.values().exclude(review_status=Status.CORRECTED).exclude(review_status=TARGET[action])


def do_create_bulk_action(queue_filter: QueueFilter, action: str, user) -> BulkAction:
    if action not in TARGET:
        raise ValueError(f"action: {action!r} is not one of {', '.join(TARGET)}")
    return BulkAction.objects.create(
        created_by=user,
        action=action,
        filters=queue_filter.as_params(),
        total=candidates(queue_filter, action).count(),
    )


def _apply_chunk(job: BulkAction, ids: list[int]) -> tuple[int, int]:
    """Change the values `ids` still eligible; returns (changed, skipped). One transaction."""
    target = TARGET[job.action]
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            ExtractedValue.objects.select_for_update(of=("self",))
            .filter(pk__in=ids)
            .exclude(review_status=Status.CORRECTED)
            .exclude(review_status=target)
            .select_related("attribute", "product")
        )
        if not rows:
            return 0, len(ids)
        ExtractedValue.objects.filter(pk__in=[v.pk for v in rows]).update(
            review_status=target,
            reviewed_value=F("value") if target == Status.ACCEPTED else "",
            reviewed_by=job.created_by,
            reviewed_at=now,
            version=F("version") + 1,
        )
        ValueEvent.objects.bulk_create(
            ValueEvent(
                value=v,
                run_id=v.run_id,
                actor=job.created_by,
                action=EVENT[job.action],
                old_status=v.review_status,
                new_status=target,
                old_value=shown_value(v),
                new_value=v.value,
                version_after=v.version + 1,
            )
            for v in rows
        )
        _sync_gold_in_bulk(rows, target, job.created_by)
    return len(rows), len(ids) - len(rows)


def _sync_gold_in_bulk(rows: list[ExtractedValue], target: str, user) -> None:
    if target != Status.ACCEPTED:
        # Only the values that were some gold's source can change gold; each hands it on properly.
        sourced = set(GoldValue.objects.filter(source__in=rows).values_list("source_id", flat=True))
        for v in rows:
            if v.pk in sourced:
                v.review_status = target
                sync_gold(v, user)
        return
    # A gold a reviewer corrected (say, on the linked run's value) is not replaced by a bulk accept.
    protected = set(
        GoldValue.objects.filter(
            product_id__in={v.product_id for v in rows}, source__review_status=Status.CORRECTED
        ).values_list("product_id", "attribute_name", "schema_id")
    )
    GoldValue.objects.bulk_create(
        [
            GoldValue(
                product_id=v.product_id,
                attribute_name=v.attribute.name,
                schema_id=v.attribute.schema_id,
                value=v.value,
                source=v,
                approved_by=user,
            )
            for v in rows
            if (v.product_id, v.attribute.name, v.attribute.schema_id) not in protected
        ],
        update_conflicts=True,
        unique_fields=["product", "attribute_name", "schema"],
        update_fields=["value", "source", "approved_by", "approved_at"],
    )


def run_bulk_action(job_id: int) -> BulkAction | None:
    """Work through a bulk action chunk by chunk, saving progress after each. Safe to rerun."""
    job = BulkAction.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job
    BulkAction.objects.filter(pk=job.pk).update(status=BulkAction.Status.RUNNING)
    ids = list(
        candidates(QueueFilter.from_params(job.filters), job.action)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    # The count may have moved since the job was made; progress is measured against what is left.
    done = changed = skipped = 0
    BulkAction.objects.filter(pk=job.pk).update(total=len(ids), done=0)
    size = chunk_size()
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        c, s = _apply_chunk(job, chunk)
        done, changed, skipped = done + len(chunk), changed + c, skipped + s
        BulkAction.objects.filter(pk=job.pk).update(done=done, changed=changed, skipped=skipped)
    BulkAction.objects.filter(pk=job.pk).update(status=BulkAction.Status.DONE, finished_at=timezone.now())
    job.refresh_from_db()
    return job


def mark_failed(job_id: int, error: str) -> None:
    BulkAction.objects.filter(pk=job_id).update(
        status=BulkAction.Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )
