"""The queue's filter: parsed from query parameters, validated, and turned into a queryset.

The same filter drives the page, the bulk actions and the exports, so "everything the filter
matches" means the same rows everywhere. Stored jobs keep the filter as its query parameters.
"""

from dataclasses import asdict, dataclass

from django.conf import settings
from django.db.models import Case, Exists, IntegerField, OuterRef, QuerySet, Subquery, Value, When

from extraction.comparison import agree
from extraction.models import ExtractedValue, Run
from review.models import ValueReview
from slotwise.params import ParameterError, optional_id, parse_number

USEFUL = "useful"  # computed in Python: review/useful_order.py, ranked by review/usefulness.py
SORTS = {
    "confidence": "Lowest confidence first",
    "disagreement": "HPD/AR disagreement first",
    USEFUL: "Most useful to review first",
}
STATUSES = tuple(ValueReview.Status.values)
CONFIDENCE_BOUNDS = ("min_confidence", "max_confidence")
# The queue walks the review row's copy of the confidence: (run, status, confidence, value) is one
# index there; the value's id is the review's key, so "id" comes from the same index.
QUEUE_CONFIDENCE = "review__confidence"
QUEUE_CUT_FIRST = "-review__cut"


def page_size() -> int:
    return settings.REVIEW_PAGE_SIZE


class FilterError(ValueError):
    """A query parameter the queue cannot use; the message names the parameter and the reason."""


def runs_with_values() -> QuerySet:
    """Runs that have at least one value, newest first: an EXISTS probe per run on the values'
    run index, not a join over every value (a run holds tens of thousands)."""
    has_values = ExtractedValue.objects.filter(run=OuterRef("pk"))
    return Run.objects.filter(Exists(has_values)).order_by("-created_at", "-id")


# ordered_values' partner argument when the caller has not looked it up
LOOK_UP = object()


def partner_of(run: Run) -> Run | None:
    """The run linked with `run` for comparison (HPD with AR), in whichever direction it was linked.

    No query when `run` was fetched with select_related("linked_run", "linked_from")."""
    if run.linked_run_id:
        return run.linked_run
    try:
        return run.linked_from
    except Run.DoesNotExist:
        return None


def partner_value_of(partner: Run) -> Subquery:
    """The partner run's value for the same product and attribute as the outer value (or NULL)."""
    return Subquery(
        ExtractedValue.objects.filter(
            run=partner, product=OuterRef("product"), attribute=OuterRef("attribute")
        ).values("value")[:1]
    )


def _optional_id(params, name: str) -> int | None:
    try:
        return optional_id(params, name)
    except ParameterError as exc:
        raise FilterError(str(exc)) from None


def _optional_confidence(params, name: str) -> float | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        number = parse_number(raw, name, "a number from 0 to 1")
    except ParameterError as exc:
        raise FilterError(str(exc)) from None
    if not 0.0 <= number <= 1.0:
        raise FilterError(f"{name}: {raw} is outside 0 to 1 (confidences are probabilities)")
    return number


def _confidence_range(params) -> tuple[float | None, float | None]:
    low, high = (_optional_confidence(params, name) for name in CONFIDENCE_BOUNDS)
    if low is not None and high is not None and low > high:
        raise FilterError(f"min_confidence: {low:g} is above max_confidence {high:g}, so nothing could match")
    return low, high


@dataclass(frozen=True)
class QueueFilter:
    run: int | None = None
    catalog: int | None = None
    category: int | None = None
    attribute: str = ""
    status: str = ""
    sort: str = "confidence"
    # Inclusive bounds on the value's (calibrated) confidence; auto-accept sets min_confidence.
    min_confidence: float | None = None
    max_confidence: float | None = None

    @classmethod
    def from_params(cls, params) -> "QueueFilter":
        status = (params.get("status") or "").strip()
        if status and status not in STATUSES:
            raise FilterError(f"status: {status!r} is not one of {', '.join(STATUSES)}")
        sort = (params.get("sort") or "confidence").strip()
        if sort not in SORTS:
            raise FilterError(f"sort: {sort!r} is not one of {', '.join(SORTS)}")
        run = _optional_id(params, "run")
        if run is not None and not Run.objects.filter(pk=run).exists():
            raise FilterError(f"run: there is no run {run}")
        min_confidence, max_confidence = _confidence_range(params)
        return cls(
            run=run,
            catalog=_optional_id(params, "catalog"),
            category=_optional_id(params, "category"),
            attribute=(params.get("attribute") or "").strip()[:100],
            status=status,
            sort=sort,
            min_confidence=min_confidence,
            max_confidence=max_confidence,
        )

    def with_default_run(self) -> "QueueFilter":
        """The newest finished run that has values, when the filter names none (a running run's
        values are still arriving); the newest run with values when none has finished yet."""
        if self.run is not None:
            return self
        with_values = runs_with_values()
        latest = (
            with_values.filter(status=Run.Status.DONE).values("pk").first()
            or with_values.values("pk").first()
        )
        return self if latest is None else self.but(run=latest["pk"])

    def but(self, **changes) -> "QueueFilter":
        """This filter with some fields changed (say, auto-accept's status and min_confidence)."""
        return QueueFilter(**{**asdict(self), **changes})

    def as_params(self) -> dict[str, str]:
        # repr keeps a float exact, so a threshold survives the round trip through a form or a job
        return {
            k: repr(v) if isinstance(v, float) else str(v)
            for k, v in asdict(self).items()
            if v not in (None, "")
        }

    def values(self) -> QuerySet:
        """Every value the filter matches, unordered (bulk actions and exports use this).

        Run, status and confidence are read from the value's review row, whose index serves them
        together (see ValueReview)."""
        qs = ExtractedValue.objects.all()
        if self.run is not None:
            qs = qs.filter(review__run_id=self.run)
        if self.catalog is not None:
            qs = qs.filter(product__catalog_id=self.catalog)
        if self.category is not None:
            qs = qs.filter(product__category_id=self.category)
        if self.attribute:
            qs = qs.filter(attribute__name=self.attribute)
        if self.status:
            qs = qs.filter(review__status=self.status)
        if self.min_confidence is not None:
            qs = qs.filter(review__confidence__gte=self.min_confidence)
        if self.max_confidence is not None:
            qs = qs.filter(review__confidence__lte=self.max_confidence)
        return qs

    def ordered_values(self, partner=LOOK_UP) -> QuerySet:
        """The queue as shown: with the linked run's value beside each value, in the chosen order.

        `partner`: the filter run's linked run (or None), when the caller has it already.
        """
        qs = self.values().select_related(
            "product", "product__catalog", "product__category", "attribute", "review", "review__reviewed_by"
        )
        if partner is LOOK_UP:
            partner = partner_of(self.run_with_partner()) if self.run is not None else None
        if partner is not None:
            other = ExtractedValue.objects.filter(
                run=partner, product=OuterRef("product"), attribute=OuterRef("attribute")
            )
            qs = qs.annotate(
                partner_value=partner_value_of(partner),
                partner_confidence=Subquery(other.values("confidence")[:1]),
            ).annotate(
                disagrees=Case(
                    When(partner_value__isnull=True, then=Value(0)),
                    When(agree("partner_value", "value"), then=Value(0)),
                    default=Value(1),
                    output_field=IntegerField(),
                )
            )
        return qs.order_by(*self.ordering(partner is not None))

    def run_with_partner(self) -> Run | None:
        """The filter's run, fetched with its linked run in either direction (one query)."""
        if self.run is None:
            return None
        return Run.objects.select_related("linked_run", "linked_from").filter(pk=self.run).first()

    def ordering(self, has_partner: bool) -> list[str]:
        """The queue's order: values cut by the token budget first (a person must read them), then
        by disagreement when asked for and a linked run exists, then by confidence. The useful
        order is not a SQL order: its pages come from review/useful_order.py, and this is its
        fallback wherever rows are listed without it (a single row re-rendered, say)."""
        if self.sort == "disagreement" and has_partner:
            return [QUEUE_CUT_FIRST, "-disagrees", QUEUE_CONFIDENCE, "id"]
        return [QUEUE_CUT_FIRST, QUEUE_CONFIDENCE, "id"]
