"""What a queue row shows, computed once for the page and for a row re-rendered after an action."""

from dataclasses import dataclass

from catalog.models import Attribute
from extraction.models import ExtractedValue
from extraction.normalize import BOOLEAN_VALUES, NA
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

    @property
    def choices(self) -> tuple[str, ...]:
        """What the edit box offers: an enumeration's or a boolean's values and n/a (a select, so
        a correction is picked by keyboard), () where any text goes."""
        return correction_choices(self.value.attribute)

    @property
    def edit_text(self) -> str:
        """What the edit box starts with: the reviewer's refused input, else the shown value; a
        number without its unit, which the box shows beside it (and a bare number is read in)."""
        return self.attempted or editable(self.shown, self.value.attribute)

    @property
    def warns_not_in_text(self) -> bool:
        """A copied value the document does not hold; other types are written, not copied."""
        return self.value.attribute.is_extractive and not self.found_in_document and self.shown != NA


def closed_values(attribute: Attribute) -> tuple[str, ...]:
    """The values an attribute's type allows besides n/a (enumeration, boolean), () when open."""
    if attribute.kind == Attribute.Kind.ENUM:
        return tuple(str(v) for v in attribute.allowed_values or ())
    if attribute.kind == Attribute.Kind.BOOLEAN:
        return BOOLEAN_VALUES
    return ()


def editable(shown: str, attribute: Attribute) -> str:
    """A shown value as an edit box starts with it: a number without its unit, which the box shows
    beside it (and a bare number is read in)."""
    if attribute.kind == Attribute.Kind.NUMBER and attribute.unit:
        return shown.removesuffix(f" {attribute.unit}")
    return shown


def correction_choices(attribute: Attribute) -> tuple[str, ...]:
    """What a correction may pick for an enumeration or a boolean: its values and n/a; () when open."""
    values = closed_values(attribute)
    return (*values, NA) if values else ()


def make_row(value: ExtractedValue, outcome: str = "ok", message: str = "", attempted: str = "") -> Row:
    shown = value.review.shown(value.value)
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
