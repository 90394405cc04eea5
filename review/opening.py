"""The one door through which new values enter review: every writer of extracted values calls
open_reviews in the transaction that wrote them, so no value is ever without its review row.

Extraction calls this small function rather than review reaching into extraction's writes: the
review state is the review app's, and the queue's index needs a row per value (see ValueReview).
"""

from collections.abc import Iterable

from extraction.models import ExtractedValue
from review.models import ValueReview


def open_reviews(values: Iterable[ExtractedValue]) -> None:
    """Give each saved value a pending review; a value written again (a batch decoded twice after
    a lease was taken over) keeps its review state and takes its new confidence and cut mark."""
    rows = [
        ValueReview(value_id=v.pk, run_id=v.run_id, confidence=v.confidence, cut=v.truncated) for v in values
    ]
    ValueReview.objects.bulk_create(
        rows,
        batch_size=5000,
        update_conflicts=True,
        unique_fields=["value"],
        update_fields=["confidence", "cut"],
    )
