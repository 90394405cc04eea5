"""Leasing work items and recording their results: how workers share a run safely.

- lease_batch takes up to N takeable items of one schema with SELECT ... FOR UPDATE SKIP LOCKED, so
  two workers never take the same item; an item is takeable when queued or when its lease expired
  (its worker died), so a kill -9 loses nothing. It takes them in order while their decoding fits the
  worker's memory (`fits`, runner/budget.py), and an item leased before (its worker died with it) alone:
  a product that kills its worker fails by itself, the others of its batch get their values.
- record_results writes a batch's values and marks its items done in ONE transaction, only for items
  whose lease is still ours; values are upserted on (run, product, attribute), so a retry overwrites
  and never duplicates. The same transaction opens each value's review (review.opening, the one
  function review exposes for writers), so no committed value lacks its review row.

Lock order is items, then the run row (record_results); leasing locks items only and never waits
(SKIP LOCKED), and cancelling touches only queued items, so these never deadlock.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Min
from django.utils import timezone

from catalog.models import Attribute
from extraction.models import ExtractedValue, Run, WorkItem
from extraction.normalize import normalize_value
from review.opening import open_reviews
from runner import incidents

# Called inside record_results' transaction once a batch's values are written, before the commit;
# None here and in every product process. The fault drill's workers set it (tools/drill/write_pause.py)
# to hold the transaction open and be killed in it.
on_values_written: Callable[[list[ExtractedValue]], None] | None = None


@dataclass
class ItemOutcome:
    """What a worker reports for one item: its values by attribute name, or the error it hit."""

    item_id: int
    values: dict = field(
        default_factory=dict
    )  # attribute name -> object with text/confidence/steps/truncated
    error: str = ""


@dataclass
class BatchTotals:
    forward_steps: int = 0
    tokens_decoded: int = 0
    seconds: float = 0.0


def lease_batch(
    run_id: int,
    owner: str,
    size: int,
    lease_seconds: int | None = None,
    fits: Callable[[list[WorkItem]], bool] | None = None,
) -> list[WorkItem]:
    """Lease up to `size` takeable items of one schema version to `owner`; [] when none is left.

    fits(items) says whether the worker can decode those items in one batch (their products loaded):
    items are taken in order while it says yes, the first one always (alone when it does not fit with
    the next). An item with attempts (its worker died, or lost PostgreSQL, holding it) is leased alone.
    """
    lease_seconds = lease_seconds or settings.EXTRACTION_LEASE_SECONDS
    now = timezone.now()
    # The first lease starts the run; its own statement, so leasing itself never waits on the run row.
    Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).update(status=Run.Status.RUNNING, started_at=now)
    with transaction.atomic():
        if not Run.objects.filter(pk=run_id, status__in=Run.ACTIVE_STATUSES).exists():
            return []
        locked = (
            WorkItem.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(run_id=run_id)
            .select_related("product")
        )
        # Expired leases first: they are the oldest work of the run.
        items = list(locked.filter(WorkItem.lease_expired(now)).order_by("schema_id", "id")[:size])
        if not items:
            items = list(locked.filter(status=WorkItem.Status.QUEUED).order_by("schema_id", "id")[:size])
        items = [item for item in items if item.schema_id == items[0].schema_id] if items else []
        if not items:
            return []
        items = _one_batch_of(items, fits)  # the others stay takeable: their locks end with this transaction
        expired = [item for item in items if item.status == WorkItem.Status.LEASED]
        if expired:
            incidents.lease_taken_over(run_id, owner, [item.lease_owner for item in expired], len(expired))
        WorkItem.objects.filter(id__in=[item.id for item in items]).update(
            status=WorkItem.Status.LEASED,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            attempts=F("attempts") + 1,
        )
    return list(
        WorkItem.objects.filter(id__in=[item.id for item in items]).select_related("product").order_by("id")
    )


def _one_batch_of(candidates: list[WorkItem], fits) -> list[WorkItem]:
    """The first candidate alone when it was leased before, else the candidates in order while they
    fit together, up to the first one leased before."""
    batch = candidates[:1]
    if batch[0].attempts:
        return batch
    for item in candidates[1:]:
        if item.attempts or (fits is not None and not fits([*batch, item])):
            break
        batch.append(item)
    return batch


def renew_leases(item_ids: list[int], owner: str, lease_seconds: int | None = None) -> int:
    """Push the expiry of our leased items forward; returns how many are still ours."""
    expires = timezone.now() + timedelta(seconds=lease_seconds or settings.EXTRACTION_LEASE_SECONDS)
    return WorkItem.objects.filter(id__in=item_ids, lease_owner=owner, status=WorkItem.Status.LEASED).update(
        lease_expires_at=expires
    )


def _value_rows(run_id: int, item: WorkItem, values: dict, attributes: dict[str, Attribute]) -> list:
    rows = []
    for name, result in values.items():
        attribute = attributes.get(name)
        if attribute is None:
            continue  # the engine answered an attribute this schema version does not have
        text = str(result.text)
        rows.append(
            ExtractedValue(
                run_id=run_id,
                product_id=item.product_id,
                attribute=attribute,
                raw_text=text,
                value=normalize_value(text, attribute.kind, attribute.unit, attribute.allowed_values),
                confidence=float(result.confidence),
                truncated=bool(result.truncated),
                steps=min(int(result.steps), 32767),
            )
        )
    return rows


def record_results(
    run_id: int, owner: str, outcomes: list[ItemOutcome], totals: BatchTotals | None = None
) -> int:
    """Write values and mark items done / failed in one transaction; returns how many items were ours.

    Items whose lease another worker has taken over (ours expired) are skipped: that worker writes them.
    """
    totals = totals or BatchTotals()
    by_id = {outcome.item_id: outcome for outcome in outcomes}
    now = timezone.now()
    with transaction.atomic():
        ours = list(
            WorkItem.objects.select_for_update()
            .filter(id__in=by_id, run_id=run_id, lease_owner=owner, status=WorkItem.Status.LEASED)
            .order_by("id")
        )
        if not ours:
            return 0
        attributes_by_schema = {}
        rows, done_ids, failed = [], [], []
        for item in ours:
            outcome = by_id[item.id]
            if outcome.error:
                failed.append((item.id, outcome.error))
                continue
            if item.schema_id not in attributes_by_schema:
                attributes_by_schema[item.schema_id] = {
                    a.name: a for a in Attribute.objects.filter(schema_id=item.schema_id)
                }
            rows += _value_rows(run_id, item, outcome.values, attributes_by_schema[item.schema_id])
            done_ids.append(item.id)
        if rows:
            ExtractedValue.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["run", "product", "attribute"],
                update_fields=["raw_text", "value", "confidence", "truncated", "steps"],
            )
            open_reviews(rows)  # bulk_create set each row's pk, the upserted ones' included
            if on_values_written is not None:
                on_values_written(rows)
        finished = {"lease_expires_at": None, "finished_at": now, "done_by": owner, "writes": F("writes") + 1}
        WorkItem.objects.filter(id__in=done_ids).update(status=WorkItem.Status.DONE, error="", **finished)
        for item_id, error in failed:
            WorkItem.objects.filter(id=item_id).update(
                status=WorkItem.Status.FAILED, error=error[:4000], **finished
            )
        Run.objects.filter(pk=run_id).update(
            done=F("done") + len(done_ids),
            failed=F("failed") + len(failed),
            forward_steps=F("forward_steps") + totals.forward_steps,
            tokens_decoded=F("tokens_decoded") + totals.tokens_decoded,
            engine_seconds=F("engine_seconds") + totals.seconds,
        )
        _finish_if_complete(run_id, now)
    return len(ours)


def release_own_leases(item_ids: list[int], owner: str) -> int:
    """Queue again the items of `item_ids` still leased to `owner` (a worker whose write did not go
    through hands its batch back at once instead of letting the lease run out); returns how many."""
    return WorkItem.objects.filter(id__in=item_ids, lease_owner=owner, status=WorkItem.Status.LEASED).update(
        status=WorkItem.Status.QUEUED, lease_owner="", lease_expires_at=None
    )


def cancel_own_leases(run_id: int, item_ids: list[int], owner: str) -> int:
    """Cancel the items of `item_ids` still leased to `owner` in a run that stopped while they were
    being decoded (the worker gave the batch up between forward steps); the run finishes when
    nothing else of it is leased. Returns how many."""
    now = timezone.now()
    with transaction.atomic():
        cancelled = WorkItem.objects.filter(
            id__in=item_ids, lease_owner=owner, status=WorkItem.Status.LEASED
        ).update(status=WorkItem.Status.CANCELLED, finished_at=now, lease_owner="", lease_expires_at=None)
        _finish_if_complete(run_id, now)
    return cancelled


def release_expired_leases(now=None) -> int:
    """Give back the leases of workers that died (the reaper's job); returns how many.

    In an active run the item is queued again, its attempts kept so max_attempts still counts the
    deaths; in a cancelled or failed run it is cancelled, and the run finishes when nothing else is
    leased. Items a worker is recording right now are locked and skipped: that worker writes them.
    """
    now = now or timezone.now()
    with transaction.atomic():
        expired = (
            WorkItem.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(WorkItem.lease_expired(now))
            .values_list("id", "run_id", "run__status", "lease_owner")
        )
        by_run: dict[tuple[int, str], list[int]] = defaultdict(list)
        owners: dict[int, set[str]] = defaultdict(set)
        for item_id, run_id, run_status, owner in expired:
            by_run[(run_id, run_status)].append(item_id)
            owners[run_id].add(owner)
        released = {"lease_owner": "", "lease_expires_at": None}
        for (run_id, run_status), item_ids in by_run.items():
            items = WorkItem.objects.filter(id__in=item_ids)
            incidents.lease_released(
                run_id, owners[run_id], len(item_ids), requeued=run_status in Run.ACTIVE_STATUSES
            )
            if run_status in Run.ACTIVE_STATUSES:
                items.update(status=WorkItem.Status.QUEUED, **released)
                continue
            items.update(status=WorkItem.Status.CANCELLED, finished_at=now, **released)
            Run.objects.select_for_update().filter(pk=run_id).first()
            _finish_if_complete(run_id, now)
    return sum(len(item_ids) for item_ids in by_run.values())


def _finish_if_complete(run_id: int, now) -> None:
    """Called with the run row locked (after its counters were updated in the same transaction)."""
    open_items = WorkItem.objects.filter(
        run_id=run_id, status__in=[WorkItem.Status.QUEUED, WorkItem.Status.LEASED]
    )
    if open_items.exists():
        return
    Run.objects.filter(pk=run_id, status__in=Run.ACTIVE_STATUSES).update(
        status=Run.Status.DONE, finished_at=now
    )
    Run.objects.filter(pk=run_id, status=Run.Status.CANCELLED, finished_at=None).update(finished_at=now)


def set_model(run_id: int, name: str, revision: str, settings_used: dict) -> None:
    """Record the model the workers actually loaded (the bundled one resolves on the worker)."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None or (run.model_name == name and run.model_revision == revision):
        return
    Run.objects.filter(pk=run_id).update(
        model_name=name, model_revision=revision, decode_settings={**run.decode_settings, **settings_used}
    )


@dataclass(frozen=True)
class Waiting:
    """Why a worker found nothing to lease: the run is over, or others hold live leases."""

    over: bool
    next_expiry_seconds: float | None  # when another worker's lease runs out, if one is held


def why_nothing_to_lease(run_id: int) -> Waiting:
    now = timezone.now()
    run = Run.objects.filter(pk=run_id).only("status").first()
    if run is None or not run.is_active:
        return Waiting(True, None)
    leased = WorkItem.objects.filter(run_id=run_id, status=WorkItem.Status.LEASED)
    if (
        not leased.exists()
        and not WorkItem.objects.filter(run_id=run_id, status=WorkItem.Status.QUEUED).exists()
    ):
        with transaction.atomic():
            Run.objects.select_for_update().filter(pk=run_id).first()
            _finish_if_complete(run_id, now)
        return Waiting(True, None)
    expiry = leased.aggregate(first=Min("lease_expires_at"))["first"]
    if expiry is None:
        return Waiting(False, 0.0)
    return Waiting(False, max(0.0, (expiry - now).total_seconds()))


def next_run_with_takeable_work(exclude: set[int]) -> int | None:
    """An active run whose queued or expired items nobody is working on (its wake-up may be lost)."""
    now = timezone.now()
    return (
        WorkItem.objects.filter(WorkItem.takeable(now), run__status__in=Run.ACTIVE_STATUSES)
        .exclude(run_id__in=exclude)
        .values_list("run_id", flat=True)
        .order_by("run_id")
        .first()
    )
