"""Review actions on single values, each in one explicit transaction (zulip's do_* style).

Optimistic concurrency: the caller passes the version it saw and review/transition.py makes the
change only if nobody changed the value meanwhile; otherwise the caller gets ReviewConflict
carrying the value as it is now.
"""

from dataclasses import dataclass

from django.db import transaction

from extraction.models import ExtractedValue
from extraction.normalize import checked_value
from review.models import ValueEvent, ValueReview
from review.transition import Action, ReviewConflict, locked_values, transition

MAX_VALUE_LENGTH = 500


class ReviewError(ValueError):
    """Input a review action cannot use; the message says what is wrong."""


class NothingToUndo(Exception):
    """The user has no change left that can be undone."""


def _target(action: str, value: ExtractedValue, text: str | None) -> tuple[str, str]:
    """(new status, new reviewed value) for `action` on `value` (ValueReview.after), the
    correction's text checked first."""
    if action in (Action.ACCEPT, Action.REJECT, Action.SET_NA):
        return ValueReview.after(action, value.value)
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
        return ValueReview.after(action, value.value, correction=text)
    raise ReviewError(f"action: {action!r} is not a review action")


def review_locked(
    value: ExtractedValue,
    seen_version: int,
    action: str,
    user,
    text: str | None = None,
    recorded_as: str | None = None,
    bulk=None,
) -> ExtractedValue:
    """`action` on `value` (locked by the caller's transaction): its target state, through the
    one transition. `recorded_as` names the history action when it differs from `action` (a bulk
    accept is recorded as bulk_accept), `bulk` the BulkAction it belongs to."""
    status, reviewed = _target(action, value, text)
    attempted = (text or "") if action == Action.CORRECT else ""
    transition(
        value, seen_version, status, reviewed, user, recorded_as or action, attempted=attempted, bulk=bulk
    )
    return value


def do_review(value_id: int, seen_version: int, action: str, user, text: str | None = None) -> ExtractedValue:
    """Accept, correct, reject or set n/a one value; writes its history and its gold."""
    with transaction.atomic():
        return review_locked(locked_values().get(pk=value_id), seen_version, action, user, text)


def last_undoable(user) -> ValueEvent | None:
    """The user's own newest change, single or part of a bulk action, not undone yet."""
    return (
        ValueEvent.objects.filter(actor=user, undone=False)
        .exclude(action=Action.UNDO)
        .select_related("value", "bulk")
        .first()
    )


# How the undo message names the change it took back.
CHANGE_WORDS = {
    Action.ACCEPT: "acceptance",
    Action.CORRECT: "correction",
    Action.REJECT: "rejection",
    Action.SET_NA: "n/a",
}


@dataclass
class Undone:
    """What an undo took back, in words for the reviewer: one value, or a bulk action's values."""

    text: str
    value: ExtractedValue | None = None  # the one value, for a single change
    count: int = 0
    skipped: int = 0  # values of a bulk action someone changed since: left as they are


def changed_since(value: ExtractedValue, event: ValueEvent) -> bool:
    """Whether a change still standing came after `event` (undos, and changes they took back, do
    not count: undoing in turn walks back through them)."""
    return (
        value.events.filter(version_after__gt=event.version_after, undone=False)
        .exclude(action=Action.UNDO)
        .exists()
    )


def _take_back(value: ExtractedValue, event: ValueEvent, user) -> ValueEvent:
    """Put `value` back as it was before `event` (the caller checked nothing changed it since)."""
    restored = ValueReview.restored_value(event.old_status, event.old_value)
    event.undone = True
    event.save(update_fields=["undone"])
    return transition(value, value.review.version, event.old_status, restored, user, Action.UNDO)


def do_undo(user) -> Undone:
    """Take back the user's own last action: one value as it was, or every value of a bulk action
    that nobody changed since. Raises NothingToUndo, or ReviewConflict when the one value was
    changed by someone since."""
    with transaction.atomic():
        event = last_undoable(user)
        if event is None:
            raise NothingToUndo("nothing to undo: you have not changed any value yet")
        if event.bulk_id is not None:
            return _undo_bulk(event.bulk, user)
        value = locked_values().get(pk=event.value_id)
        if changed_since(value, event):
            raise ReviewConflict(value)
        undo = _take_back(value, event, user)
        where = f"{value.attribute.name} of {value.product.sku} (run #{value.run_id})"
        text = (
            f"Undone your {CHANGE_WORDS.get(event.action, event.action)} of {where}: it is "
            f"{undo.new_value!r} ({value.review.get_status_display().lower()}) again."
        )
        return Undone(text, value=value, count=1)


def _undo_bulk(job, user) -> Undone:
    events = list(
        job.events.filter(actor=user, undone=False).exclude(action=Action.UNDO).order_by("value_id")
    )
    values = locked_values().in_bulk([e.value_id for e in events])
    count = skipped = 0
    for event in events:
        value = values[event.value_id]
        if changed_since(value, event):
            skipped += 1
            event.undone = True  # nothing to take back here any more; the next undo goes further back
            event.save(update_fields=["undone"])
            continue
        _take_back(value, event, user)
        count += 1
    text = (
        f"Undone your bulk {job.get_action_display().lower()} #{job.pk}: {count} value"
        f"{'s' if count != 1 else ''} back as they were."
    )
    if skipped:
        text += f" {skipped} changed by someone since were left as they are."
    return Undone(text, count=count, skipped=skipped)
