"""The one transition of a value's review, for single actions, undo and bulk actions alike.

A change is: the new status and reviewed value written under the version the caller saw (an
`UPDATE ... WHERE version = seen`, so a value someone else changed meanwhile is never overwritten
silently), the version bumped, one history event, and the gold rule. review/actions.py (accept,
correct, reject, n/a, undo) and review/bulk.py (bulk accept and reject, auto-accept among them)
all call transition(), so what a change writes is defined here once.
"""

from django.db.models import F
from django.utils import timezone

from extraction.models import ExtractedValue
from review.gold import JUDGED_BY_HAND, state_made_by_hand, sync_gold
from review.models import ValueEvent, ValueReview

Action = ValueEvent.Action


class ReviewConflict(Exception):
    """The value changed since the caller saw it; `current` is the value as it is now."""

    def __init__(self, current: ExtractedValue, attempted: str = ""):
        self.current = current
        self.attempted = attempted
        review = current.review
        who = review.reviewed_by.username if review.reviewed_by else "someone"
        then = (
            "your input is kept in the edit box: save it again if it is still right."
            if attempted
            else "look at the current value and act again if it is still needed."
        )
        super().__init__(
            f"{who} changed this value while you were looking at it: it is now "
            f"{current.review.shown(current.value)!r} ({review.get_status_display().lower()}). Nothing was saved; {then}"
        )


def locked_values():
    """Values with their review, the value rows locked: every review change locks through here,
    so two changes of one value take turns (the review row is on the nullable side of the join)."""
    return ExtractedValue.objects.select_for_update(of=("self",)).select_related(
        "attribute", "product", "review", "review__reviewed_by"
    )


def transition(
    value: ExtractedValue,
    seen_version: int,
    status: str,
    reviewed: str,
    user,
    action: str,
    attempted: str = "",
    bulk=None,
) -> ValueEvent:
    """Move `value` (locked by the caller, see locked_values) to `status` with `reviewed` as the
    reviewer's value; `action` is what the history records, `bulk` the BulkAction it is part of.
    Raises ReviewConflict when `seen_version` is stale, `attempted` being the input to keep for the
    reviewer."""
    review = value.review
    old_status, old_shown = review.status, review.shown(value.value)
    now = timezone.now()
    reviewer = ValueReview.reviewer_for(status, user)
    changed = ValueReview.objects.filter(pk=value.pk, version=seen_version).update(
        status=status,
        reviewed_value=reviewed,
        reviewed_by=reviewer,
        reviewed_at=now if reviewer else None,
        version=F("version") + 1,
    )
    if not changed:
        raise ReviewConflict(value, attempted)
    review.status, review.reviewed_value = status, reviewed
    review.reviewed_by, review.reviewed_at, review.version = (
        reviewer,
        (now if reviewer else None),
        seen_version + 1,
    )
    event = ValueEvent.objects.create(
        value=value,
        run_id=value.run_id,
        actor=user,
        action=action,
        old_status=old_status,
        new_status=status,
        old_value=old_shown,
        new_value=review.shown(value.value),
        version_after=review.version,
        bulk=bulk,
    )
    # A bulk accept makes no gold (review/gold.py), so it never replaces gold a reviewer typed in;
    # an undo puts back a state whose history says how it was made.
    by_hand = state_made_by_hand(value) if action == Action.UNDO else action in JUDGED_BY_HAND
    sync_gold(value, user, by_hand)
    return event
