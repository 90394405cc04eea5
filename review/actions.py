"""Review actions on single values, each in one explicit transaction (zulip's do_* style).

Optimistic concurrency: the caller passes the version it saw and review/transition.py makes the
change only if nobody changed the value meanwhile; otherwise the caller gets ReviewConflict
carrying the value as it is now.
"""

from django.db import transaction

from extraction.domain import NA
from extraction.models import ExtractedValue
from extraction.normalize import checked_value
from review.gold import APPROVED
from review.models import ValueEvent
from review.transition import Action, ReviewConflict, Status, locked_values, transition

MAX_VALUE_LENGTH = 500


class ReviewError(ValueError):
    """Input a review action cannot use; the message says what is wrong."""


class NothingToUndo(Exception):
    """The user has no change left that can be undone."""


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


def review_locked(
    value: ExtractedValue,
    seen_version: int,
    action: str,
    user,
    text: str | None = None,
    recorded_as: str | None = None,
) -> ExtractedValue:
    """`action` on `value` (locked by the caller's transaction): its target state, through the
    one transition. `recorded_as` names the history action when it differs from `action` (a bulk
    accept is recorded as bulk_accept)."""
    status, reviewed = _target(action, value, text)
    attempted = (text or "") if action == Action.CORRECT else ""
    transition(value, seen_version, status, reviewed, user, recorded_as or action, attempted=attempted)
    return value


def do_review(value_id: int, seen_version: int, action: str, user, text: str | None = None) -> ExtractedValue:
    """Accept, correct, reject or set n/a one value; writes its history and its gold."""
    with transaction.atomic():
        return review_locked(locked_values().get(pk=value_id), seen_version, action, user, text)


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
        value = locked_values().get(pk=event.value_id)
        if value.review.version != event.version_after:
            raise ReviewConflict(value)
        restored = event.old_value if event.old_status in APPROVED else ""
        event.undone = True
        event.save(update_fields=["undone"])
        undo = transition(value, value.review.version, event.old_status, restored, user, Action.UNDO)
    return value, undo
