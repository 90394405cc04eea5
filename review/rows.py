"""What a queue row shows, computed once for the page and for a row re-rendered after an action."""

from dataclasses import dataclass

from extraction.models import ExtractedValue
from review.actions import shown_value
from review.filters import QueueFilter, partner_of
from review.highlight import highlight, occurs


@dataclass
class Row:
    value: ExtractedValue
    shown: str
    document_html: str
    found_in_document: bool
    partner_value: str | None
    disagrees: bool
    outcome: str = "ok"  # ok | conflict | error: tells the page whether to move on
    message: str = ""
    attempted: str = ""


def make_row(value: ExtractedValue, outcome: str = "ok", message: str = "", attempted: str = "") -> Row:
    shown = shown_value(value)
    document = value.product.document
    return Row(
        value=value,
        shown=shown,
        document_html=highlight(document, shown),
        found_in_document=occurs(document, shown),
        partner_value=getattr(value, "partner_value", None),
        disagrees=bool(getattr(value, "disagrees", 0)),
        outcome=outcome,
        message=message,
        attempted=attempted,
    )


def fresh_row(value_id: int, **kwargs) -> Row:
    """The row of one value as the queue would list it now (with its linked run's value)."""
    run = (
        ExtractedValue.objects.select_related("run__linked_run", "run__linked_from")
        .only("run")
        .get(pk=value_id)
        .run
    )
    rows = QueueFilter(run=run.pk).ordered_values(partner=partner_of(run))
    return make_row(rows.get(pk=value_id), **kwargs)
