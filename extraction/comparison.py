"""HPD versus AR on the same products: agreement per attribute and the values that differ.

Two values agree when their normalized forms are equal ignoring case (normalization: normalize.py):
`extraction.domain.values_agree` in Python, `agree` here in SQL, the one rule for the run comparison,
the review queue's disagreement sort and the A/B panel's "differs" mark. Computed in SQL so a run of a million
products compares without loading it.
"""

from dataclasses import dataclass

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Lower
from django.db.models.lookups import Exact

from extraction.models import ExtractedValue, Run


def agree(left, right) -> Exact:
    """values_agree as a SQL condition on two expressions or field names."""
    return Exact(Lower(left), Lower(right))


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
    )


def agreement_by_attribute(run: Run, other: Run) -> list[Agreement]:
    rows = (
        _paired(run, other)
        .values("attribute__name")
        .annotate(compared=Count("id"), agreed=Count("id", filter=agree("value", "other_value")))
        .order_by("attribute__name")
    )
    return [Agreement(row["attribute__name"], row["compared"], row["agreed"]) for row in rows]


def disagreements(run: Run, other: Run):
    """Values of `run` whose counterpart in `other` differs, with that counterpart as other_value."""
    return (
        _paired(run, other)
        .exclude(agree("value", "other_value"))
        .select_related("product", "attribute")
        .order_by("product__sku", "attribute__position")
    )
