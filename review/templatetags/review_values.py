"""What a page outside the review app needs to show a value's review (the product page loads these
with {% load review_values %}: a template loads a library, so the catalog imports nothing above it)."""

from django import template

from extraction.models import ExtractedValue
from review import rows

register = template.Library()


@register.filter
def shown_value(value: ExtractedValue) -> str:
    """The value a reader should see: the reviewer's when approved, else the model's."""
    return value.review.shown(value.value)


register.filter("correction_choices", rows.correction_choices)


@register.filter
def edit_text(value: ExtractedValue) -> str:
    """What the correction box starts with (rows.editable)."""
    return rows.editable(shown_value(value), value.attribute)
