"""Auto-accept thresholds from this catalog's own blind labels, per attribute.

Auto-accept ("accept every pending value of this attribute with confidence at least t") is only as
good as the precision estimate behind t. It comes from one place only: the run's own values on the
products of its catalog that a person labelled blind (review/blind.py: a seeded random sample of the
catalog, typed with no model output in sight). A value is right when it is the label (an n/a
included). Values cut by the token budget are left out: they are never auto-accepted.

A threshold is offered for an attribute only where the lower end of the Wilson 95% interval
(calibration.wilson, the one definition) of the precision above it reaches the target, over at
least MIN_PRODUCTS labelled products. Otherwise the page says how many more blind labels the
attribute needs, assuming the model stays as right on them as it was so far. Neither the model's dev
figures nor values reviewed in the queue (sorted by confidence, so no fair sample) count.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import OuterRef, Subquery

from catalog.models import Attribute
from extraction.engine import metric
from extraction.engine.calibration import wilson
from extraction.models import Run
from review.bootstrap import MIN_PRODUCTS
from review.models import GoldValue

# A slice of the most confident values this large says how right they are, for the labels-needed guess.
SLICE = 10
# Beyond this many labelled products an attribute is not worth asking for.
MAX_PRODUCTS_ASKED = 20_000


@dataclass(frozen=True)
class Point:
    """Precision of the values with confidence >= threshold: right / n, Wilson 95% low-high."""

    threshold: float
    precision: float
    n: int
    low: float
    high: float

    @property
    def precision_pct(self) -> str:
        return percent(self.precision)

    @property
    def low_pct(self) -> str:
        return percent(self.low)

    @property
    def high_pct(self) -> str:
        return percent(self.high)


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def point(threshold: float, right: int, n: int) -> Point:
    return Point(threshold, right / n, n, *wilson(right, n))


@dataclass
class AttributeEstimate:
    """One attribute of the run: its blind evidence and the threshold offered, if any."""

    attribute: str
    labelled: int  # this attribute's values on blind-labelled products (one per product)
    right: int  # of them, how many are the label
    proposal: Point | None  # the lowest threshold whose interval's lower end reaches the target
    needed: int | None  # more blind-labelled products it needs; None: no number of labels would do
    pending: int = 0  # pending values the proposal would accept (the view fills it in)

    @property
    def precision_pct(self) -> str:
        return percent(self.right / self.labelled) if self.labelled else "—"


@dataclass
class Estimate:
    target: float
    labelled_products: int  # products of the run that are labelled blind
    run_products: int
    attributes: list[AttributeEstimate] = field(default_factory=list)

    @property
    def too_few(self) -> bool:
        return self.labelled_products < MIN_PRODUCTS

    @property
    def offered(self) -> list[AttributeEstimate]:
        return [a for a in self.attributes if a.proposal is not None]

    @property
    def products_needed(self) -> int:
        """Blind-labelled products still needed before any attribute can be judged at all."""
        return max(MIN_PRODUCTS - self.labelled_products, 0)

    def of(self, attribute: str) -> AttributeEstimate | None:
        return next((a for a in self.attributes if a.attribute == attribute), None)


def blind_judged(run: Run) -> dict[str, list[tuple[float, bool]]]:
    """attribute -> (confidence, right) for each of the run's values, cut ones aside, whose product
    has a blind label of that attribute under the value's schema."""
    label = GoldValue.objects.filter(
        provenance=GoldValue.Provenance.BLIND,
        product=OuterRef("product"),
        attribute_name=OuterRef("attribute__name"),
        schema=OuterRef("attribute__schema"),
    ).values("value")[:1]
    rows = (
        run.values.filter(truncated=False)
        .annotate(label=Subquery(label))
        .filter(label__isnull=False)
        .values_list("attribute__name", "confidence", "value", "label")
    )
    judged: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for name, confidence, value, gold in rows.iterator():
        # Accepting the value is right when it is the label, an n/a included.
        judged[name].append((confidence, metric.outcome(value, [gold]) in ("VC", "NN")))
    return judged


def lowest_offered(pairs: list[tuple[float, bool]], target: float) -> Point | None:
    """The lowest stored confidence t whose values >= t number at least MIN_PRODUCTS and whose
    Wilson lower bound reaches `target`: the threshold that accepts the most while the interval
    still clears the target."""
    ordered = sorted(pairs, key=lambda p: -p[0])
    best = None
    right = 0
    for i, (confidence, ok) in enumerate(ordered):
        right += ok
        n = i + 1
        if n < len(ordered) and ordered[n][0] == confidence:
            continue  # a threshold takes every value of its confidence
        if n >= MIN_PRODUCTS:
            candidate = point(confidence, right, n)
            if candidate.low >= target:
                best = candidate
    return best


def labels_needed(pairs: list[tuple[float, bool]], target: float) -> int | None:
    """More blind-labelled products before a threshold could be offered, if the model stays as right
    as on its most confident labelled values so far (all right, with none yet); None when even those
    fall short of the target, so no number of labels would make one."""
    n = len(pairs)
    ordered = sorted(pairs, key=lambda p: -p[0])
    if n < SLICE:
        precision, share = (sum(ok for _, ok in pairs) / n if n else 1.0), 1.0
    else:
        # the most confident slice of at least SLICE values with the best precision
        right, best = 0, (0.0, 1.0)
        for i, (_, ok) in enumerate(ordered):
            right += ok
            if i + 1 >= SLICE and right / (i + 1) >= best[0]:
                best = (right / (i + 1), (i + 1) / n)
        precision, share = best
    if precision < target or (precision == target and precision < 1):
        return None
    above = _smallest_sample(precision, target)
    if above is None:
        return None
    return max(math.ceil(above / share) - n, MIN_PRODUCTS - n, 1)


def _smallest_sample(precision: float, target: float) -> int | None:
    """The fewest values, right at `precision`, whose Wilson lower bound reaches `target`."""

    def reaches(m: int) -> bool:
        return wilson(round(precision * m), m)[0] >= target

    low, high = MIN_PRODUCTS, MAX_PRODUCTS_ASKED
    if not reaches(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle + 1
    return low


def estimate(run: Run, target: float) -> Estimate:
    """The threshold offered for each of `run`'s attributes at `target`, from its blind evidence."""
    judged = blind_judged(run)
    names = (
        Attribute.objects.filter(schema__in=run.work_items.values("schema"))
        .order_by("position", "name")
        .values_list("name", flat=True)
    )
    found = Estimate(target, _labelled_products(run), run.work_items.count())
    for name in dict.fromkeys(names):  # schema order, each name once
        pairs = judged.get(name, [])
        proposal = lowest_offered(pairs, target)
        found.attributes.append(
            AttributeEstimate(
                attribute=name,
                labelled=len(pairs),
                right=sum(ok for _, ok in pairs),
                proposal=proposal,
                needed=0 if proposal else labels_needed(pairs, target),
            )
        )
    return found


def _labelled_products(run: Run) -> int:
    """The run's products that carry a blind label."""
    blind = GoldValue.objects.filter(provenance=GoldValue.Provenance.BLIND)
    return run.work_items.filter(product__in=blind.values("product")).count()
