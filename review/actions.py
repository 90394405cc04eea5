"""Review actions on single values, each in one explicit transaction (zulip's do_* style).

Optimistic concurrency: the caller passes the version it saw; the change is an
`UPDATE ... WHERE version = seen`, so a value someone else changed meanwhile is never overwritten
silently: the caller gets ReviewConflict carrying the value as it is now.
"""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from extraction.domain import NA
from extraction.models import ExtractedValue
from extraction.normalize import checked_value
from review.gold import sync_gold
from review.models import GoldValue, ValueEvent

MAX_VALUE_LENGTH = 500
Status = ExtractedValue.ReviewStatus
Action = ValueEvent.Action


class ReviewError(ValueError):
    """Input a review action cannot use; the message says what is wrong."""


class ReviewConflict(Exception):
    """The value changed since the caller saw it; `current` is the value as it is now."""

    def __init__(self, current: ExtractedValue, attempted: str = ""):
        self.current = current
        self.attempted = attempted
        who = current.reviewed_by.username if current.reviewed_by else "someone"
        then = (
            "your input is kept in the edit box: save it again if it is still right."
            if attempted
            else "look at the current value and act again if it is still needed."
        )
        super().__init__(
            f"{who} changed this value while you were looking at it: it is now "
            f"{shown_value(current)!r} ({current.get_review_status_display().lower()}). Nothing was saved; {then}"
        )


class NothingToUndo(Exception):
    """The user has no change left that can be undone."""


def shown_value(value: ExtractedValue) -> str:
    """The value a reader should see: the reviewer's when approved, else the model's."""
    if value.review_status in (Status.ACCEPTED, Status.CORRECTED):
        return value.reviewed_value
    return value.value


def _target(action: str, value: ExtractedValue, text: str | None) -> tuple[str, str]:
    """(new status, new reviewed value) for `action` on `value`."""
    if action == Action.ACCEPT:
        return Status.ACCEPTED, value.value
    if action == Action.REJECT:
        return Status.REJECTED, ""
    if action == Action.SET_NA:
        return (Status.ACCEPTED if value.value == NA else Status.CORRECTED), NA
    if action == Action.CORRECT:
        text = (text or "").strip()
        if not text:
            raise ReviewError("value: type the correct value (or use n/a when the product has none)")
        if len(text) > MAX_VALUE_LENGTH:
            raise ReviewError(f"value: {len(text)} characters, at most {MAX_VALUE_LENGTH} are allowed")
        attribute = value.attribute
        try:
            # stored as the model's values are: an enumeration's spelling, a number in the schema's unit
            text = checked_value(text, attribute.kind, attribute.unit, attribute.allowed_values)
        except ValueError as exc:
            raise ReviewError(f"value: {exc}; nothing was saved") from None
        return (Status.ACCEPTED if text == value.value else Status.CORRECTED), text
    raise ReviewError(f"action: {action!r} is not a review action")


def _locked(value_id: int) -> ExtractedValue:
    return (
        ExtractedValue.objects.select_for_update(of=("self",))
        .select_related("attribute", "product", "reviewed_by")
        .get(pk=value_id)
    )


def _apply(
    value: ExtractedValue, seen_version: int, status: str, reviewed: str, user, attempted: str
) -> None:
    """The conditional update itself; raises ReviewConflict when `seen_version` is stale."""
    now = timezone.now()
    reviewer = user if status != Status.PENDING else None
    changed = ExtractedValue.objects.filter(pk=value.pk, version=seen_version).update(
        review_status=status,
        reviewed_value=reviewed,
        reviewed_by=reviewer,
        reviewed_at=now if reviewer else None,
        version=F("version") + 1,
    )
    if not changed:
        raise ReviewConflict(value, attempted)
    value.review_status, value.reviewed_value = status, reviewed
    value.reviewed_by, value.reviewed_at, value.version = (
        reviewer,
        (now if reviewer else None),
        seen_version + 1,
    )


def review_locked(
    value: ExtractedValue,
    seen_version: int,
    action: str,
    user,
    text: str | None = None,
    recorded_as: str | None = None,
) -> ExtractedValue:
    """The one review transition, for single and bulk actions alike: new state, history, gold.

    `value` must be locked by the caller's transaction. `recorded_as` names the history action
    when it differs from `action` (a bulk accept is recorded as bulk_accept).
    """
    old_status, old_shown = value.review_status, shown_value(value)
    status, reviewed = _target(action, value, text)
    _apply(
        value,
        seen_version,
        status,
        reviewed,
        user,
        attempted=(text or "") if action == Action.CORRECT else "",
    )
    ValueEvent.objects.create(
        value=value,
        run_id=value.run_id,
        actor=user,
        action=recorded_as or action,
        old_status=old_status,
        new_status=status,
        old_value=old_shown,
        new_value=shown_value(value),
        version_after=value.version,
    )
    # A bulk accept does not replace a gold a reviewer typed in (say, on the linked run's value).
    if not (recorded_as == Action.BULK_ACCEPT and _gold_is_a_correction(value)):
        sync_gold(value, user)
    return value


def _gold_is_a_correction(value: ExtractedValue) -> bool:
    return GoldValue.objects.filter(
        product_id=value.product_id,
        attribute_name=value.attribute.name,
        schema_id=value.attribute.schema_id,
        source__review_status=Status.CORRECTED,
    ).exists()


def do_review(value_id: int, seen_version: int, action: str, user, text: str | None = None) -> ExtractedValue:
    """Accept, correct, reject or set n/a one value; writes its history and its gold."""
    with transaction.atomic():
        return review_locked(_locked(value_id), seen_version, action, user, text)


def last_undoable(user) -> ValueEvent | None:
    """The user's newest single-value change that has not been undone yet."""
    return (
        ValueEvent.objects.filter(actor=user, undone=False)
        .exclude(action__in=(Action.UNDO, Action.BULK_ACCEPT, Action.BULK_REJECT))
        .select_related("value")
        .first()
    )


def do_undo(user) -> tuple[ExtractedValue, ValueEvent]:
    """Put back the value the user changed last, as it was before that change."""
    with transaction.atomic():
        event = last_undoable(user)
        if event is None:
            raise NothingToUndo("nothing to undo: you have not changed any value yet")
        value = _locked(event.value_id)
        if value.version != event.version_after:
            raise ReviewConflict(value)
        restored = event.old_value if event.old_status in (Status.ACCEPTED, Status.CORRECTED) else ""
        before_status, before_shown = value.review_status, shown_value(value)
        _apply(value, value.version, event.old_status, restored, user, attempted="")
        event.undone = True
        event.save(update_fields=["undone"])
        undo = ValueEvent.objects.create(
            value=value,
            run_id=value.run_id,
            actor=user,
            action=Action.UNDO,
            old_status=before_status,
            new_status=value.review_status,
            old_value=before_shown,
            new_value=shown_value(value),
            version_after=value.version,
        )
        sync_gold(value, user)
    return value, undo
