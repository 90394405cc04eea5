"""HPD versus AR on the same products: agreement per attribute and the values that differ.

Two values agree when their normalized forms are equal ignoring case (normalization: normalize.py).
Computed in SQL so a run of a million products compares without loading it.
"""

from dataclasses import dataclass

from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Lower

from extraction.models import ExtractedValue, Run


@dataclass(frozen=True)
class Agreement:
    attribute: str
    compared: int
    agreed: int

    @property
    def rate(self) -> float:
        return self.agreed / self.compared if self.compared else 0.0


def _paired(run: Run, other: Run):
    other_value = ExtractedValue.objects.filter(
        run=other, product=OuterRef("product"), attribute=OuterRef("attribute")
    ).values("value")[:1]
    return (
        ExtractedValue.objects.filter(run=run)
        .annotate(other_value=Subquery(other_value))
        .exclude(other_value=None)
        .annotate(folded=Lower("value"), other_folded=Lower("other_value"))
    )


def agreement_by_attribute(run: Run, other: Run) -> list[Agreement]:
    rows = (
        _paired(run, other)
        .values("attribute__name")
        .annotate(compared=Count("id"), agreed=Count("id", filter=Q(folded=F("other_folded"))))
        .order_by("attribute__name")
    )
    return [Agreement(row["attribute__name"], row["compared"], row["agreed"]) for row in rows]


def disagreements(run: Run, other: Run):
    """Values of `run` whose counterpart in `other` differs, with that counterpart as other_value."""
    return (
        _paired(run, other)
        .exclude(folded=F("other_folded"))
        .select_related("product", "attribute")
        .order_by("product__sku", "attribute__position")
    )
