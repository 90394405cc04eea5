"""Gold values: one per (product, attribute name, schema version), each knowing how it was made.

Reviewing a model value by hand (accept, correct, set n/a, one value at a time) makes it the gold,
as an acceptance or a correction of that value's run. A value accepted in bulk (auto-accept
included) is approved for export but never gold: no person looked at it, so it must not score any
run nor teach the model (export_gold, gold.jsonl). A blind label (typed by a reviewer who saw no model output, see
review/blind.py) outranks any review of a model value: only another blind label replaces it, so the
gold that scores every run fairly is never traded for gold that one run supplied.
"""

from django.db.models import OuterRef, Q, Subquery

from extraction.models import ExtractedValue
from review.models import APPROVED, GoldValue, ValueEvent, provenance_of

Provenance = GoldValue.Provenance

# The history actions that mean a person looked at this one value (the one definition).
JUDGED_BY_HAND = (ValueEvent.Action.ACCEPT, ValueEvent.Action.CORRECT, ValueEvent.Action.SET_NA)


def approved_values():
    return ExtractedValue.objects.filter(review__status__in=APPROVED)


def standing_changes():
    """The changes still standing (ValueEvent.objects.standing) of the outer query's value, newest
    first: the first says how its current state was made (for a Subquery over ExtractedValue)."""
    return ValueEvent.objects.standing().filter(value=OuterRef("pk"))


def approved_by_hand():
    """Approved values whose approval a person made on that value (its last live change, undo
    aside, is a single accept, correction or n/a): the only approvals that may be gold."""
    last = standing_changes().values("action")[:1]
    return approved_values().annotate(made_by=Subquery(last)).filter(made_by__in=JUDGED_BY_HAND)


def state_made_by_hand(value: ExtractedValue) -> bool:
    """Whether `value`'s current review state was set by a person acting on it alone. An undo puts
    back the state of the newest change still standing, so that change says how it was made."""
    return value.events.standing().values_list("action", flat=True).first() in JUDGED_BY_HAND


def sync_gold(value: ExtractedValue, user, by_hand: bool) -> None:
    """Make the gold row of `value`'s (product, attribute, schema) agree with its new review state.

    Call inside the transaction that changed the value; `by_hand`: a person set its new state
    acting on this value alone (see state_made_by_hand). An approval made by hand becomes the gold; an approval in bulk is not gold, and taking an approval
    back hands the gold to the newest other approval by hand of the same attribute, else to the
    catalog's known value, else drops it.
    """
    key = {
        "product_id": value.product_id,
        "attribute_name": value.attribute.name,
        "schema_id": value.attribute.schema_id,
    }
    gold = GoldValue.objects.filter(**key).first()
    if gold is not None and gold.provenance == Provenance.BLIND:
        return  # a blind label stays the gold whatever happens to the model's values
    review = value.review
    if review.is_approved and by_hand:
        kind, run_id = provenance_of(review.reviewed_value, value)
        # One INSERT ... ON CONFLICT DO UPDATE: race-free against a concurrent review of the same
        # attribute, and one statement where update_or_create takes a lock, savepoints and two more.
        GoldValue.objects.bulk_create(
            [
                GoldValue(
                    **key,
                    value=review.reviewed_value,
                    source=value,
                    provenance=kind,
                    from_run_id=run_id,
                    approved_by=user,
                )
            ],
            update_conflicts=True,
            unique_fields=["product", "attribute_name", "schema"],
            update_fields=["value", "source", "provenance", "from_run", "approved_by", "approved_at"],
        )
        return
    if gold is None or (gold.source_id is not None and gold.source_id != value.pk):
        return
    if gold.source_id is None:
        return  # seeded from the catalog, not from this value: a review elsewhere does not touch it
    other = (
        approved_by_hand()
        .filter(product_id=value.product_id, attribute_id=value.attribute_id)
        .filter(~Q(pk=value.pk))
        .select_related("review")
        .order_by("-review__reviewed_at", "-id")
        .first()
    )
    known = value.product.known_values.get(value.attribute.name)
    if other is None and known not in (None, ""):
        # The catalog knew this value before any review: it is the gold again.
        gold.value, gold.source, gold.approved_by = str(known), None, None
    elif other is None:
        gold.delete()
        return
    else:
        gold.value, gold.source, gold.approved_by_id = (
            other.review.reviewed_value,
            other,
            other.review.reviewed_by_id,
        )
    gold.provenance, gold.from_run_id = provenance_of(gold.value, gold.source)
    gold.save()
