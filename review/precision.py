"""Auto-accept thresholds from this catalog's own blind labels, per attribute.

Auto-accept ("accept every pending value of this attribute with confidence at least t") is only as
good as the precision estimate behind t. It comes from one place only: the run's own values on the
products of its catalog that a person labelled blind (review/blind.py: a seeded random sample of the
catalog, typed with no model output in sight). A value is right when it is the label (an n/a
included). Values cut by the token budget are left out: they are never auto-accepted.

A threshold is offered for an attribute only where the lower end of the Wilson 95% interval
(calibration.wilson, the one definition) of the precision above it reaches the target, over at
least MIN_PRODUCTS labelled values. Otherwise the page says how many more blind labels the
attribute needs, assuming the model stays as right on them as it was so far. Neither the model's dev
figures nor values reviewed in the queue (sorted by confidence, so no fair sample) count.

One attribute's labels rarely suffice at a high target (an all-right sample needs 188 values before
its lower end reaches 98%: 188 labelled products), so the attributes with no threshold of their own
are pooled: one threshold t for all of them, offered where the lower end of the Wilson interval of
the precision of all their blind-labelled values with confidence >= t reaches the target. The pool
assumes that a value at a given confidence is about as often right whatever its attribute; an
attribute whose own labelled values at >= t refute that (the upper end of their interval is below
the target: "an invented value at 0.98") is left out of the pool at t, named with its figures, and
its values are never accepted on the pool's evidence. The bound still counts the left-out
attributes' labels: leaving an attribute out because its labels showed errors and then bounding
only the others' would choose the sample by its outcome, and the bound would flatter what it
accepts (measured: simulate_review on WDC-PAVE dev, 20 blind products, accepted 2,166 values on such
a pool "at 98%" of which 97.4% were right). Counted whole, the blind sample is a random sample of
the products, so the pooled values are a fair sample of what a threshold over all of them accepts,
and leaving out attributes that show themselves worse only raises the precision of the rest.
"""

import math
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache

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


# The pooled rule asks for the interval of the same (right, n) at many thresholds: computed once each.
_interval = lru_cache(maxsize=4096)(wilson)


def point(threshold: float, right: int, n: int) -> Point:
    return Point(threshold, right / n, n, *_interval(right, n))


@dataclass(frozen=True)
class Pool:
    """The threshold shared by the attributes with none of their own: `point` is the precision of
    all their blind-labelled values at or above it, the left-out attributes' included; `members`:
    the attributes accepted on it; `left_out`: (attribute, its own point at that threshold) for each
    attribute whose own labels there fall short of the target."""

    point: Point
    members: tuple[str, ...]
    left_out: tuple[tuple[str, Point], ...] = ()


@dataclass
class AttributeEstimate:
    """One attribute of the run: its blind evidence and the threshold offered, if any."""

    attribute: str
    labelled: int  # this attribute's values on blind-labelled products (one per product)
    right: int  # of them, how many are the label
    proposal: Point | None  # the lowest threshold whose interval's lower end reaches the target
    needed: int | None  # more blind-labelled products it needs; None: no number of labels would do
    pending: int = 0  # pending values the proposal would accept (the view fills it in)
    pooled: bool = False  # the proposal is the pool's threshold and evidence, not the attribute's own

    @property
    def precision_pct(self) -> str:
        return percent(self.right / self.labelled) if self.labelled else "—"


@dataclass
class Estimate:
    target: float
    labelled_products: int  # products of the run that are labelled blind
    run_products: int
    attributes: list[AttributeEstimate] = field(default_factory=list)
    pooled_over: tuple[str, ...] = ()  # the attributes with no threshold of their own (pooled if 2+)
    pool: Pool | None = None  # the pooled threshold, when one is offered
    pool_needed: int | None = None  # else more blind-labelled products it needs (None: no number would do)

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
        for i, (confidence, ok) in enumerate(ordered):
            right += ok
            if i + 1 < n and ordered[i + 1][0] == confidence:
                continue  # a threshold takes every value of its confidence
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


def refuted(pairs: list[tuple[float, bool]], threshold: float, target: float) -> Point | None:
    """The attribute's own point at `threshold` when its labelled values there show it below the
    target (the upper end of their interval short of it), else None: nothing says it is unlike."""
    above = [ok for confidence, ok in pairs if confidence >= threshold]
    if all(above):
        return None  # none, or all right: nothing refutes it (and no interval to compute)
    own = point(threshold, sum(above), len(above))
    return own if own.high < target else None


def pooled_offer(judged: dict[str, list[tuple[float, bool]]], target: float) -> Pool | None:
    """The lowest confidence t at which the attributes of `judged` have, together, at least
    MIN_PRODUCTS labelled values >= t whose Wilson lower bound reaches `target`, accepted there for
    the attributes not refuted at t (see refuted); None when no t does. The refuted attributes'
    labels count in the bound (the module's docstring says why). An attribute with no labelled
    value >= t stays in the pool: nothing of its own says it is unlike the others."""
    best = None
    for threshold in sorted(
        {confidence for pairs in judged.values() for confidence, _ in pairs}, reverse=True
    ):
        left_out = {name: refuted(pairs, threshold, target) for name, pairs in judged.items()}
        members = [name for name, own in left_out.items() if own is None]
        above = [ok for pairs in judged.values() for confidence, ok in pairs if confidence >= threshold]
        if len(above) < MIN_PRODUCTS:
            continue
        pooled = point(threshold, sum(above), len(above))
        if pooled.low >= target:
            best = Pool(pooled, tuple(members), tuple((n, own) for n, own in left_out.items() if own))
    return best


def pool_labels_needed(judged: dict[str, list[tuple[float, bool]]], labelled_products: int, target: float):
    """More blind-labelled products before a pooled threshold could be offered (labels_needed over
    the pool's values, as products at the pool's values per labelled product); None: no number."""
    pairs = [pair for pairs in judged.values() for pair in pairs]
    values = labels_needed(pairs, target)
    if values is None or not pairs:
        return values
    return max(math.ceil(values * max(labelled_products, 1) / len(pairs)), 1)


def estimate(run: Run, target: float) -> Estimate:
    """The threshold offered for each of `run`'s attributes at `target`, from its blind evidence:
    its own where its labels allow, else the pool's (see the module's docstring)."""
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
    if found.too_few:
        return found
    alone = {a.attribute: judged.get(a.attribute, []) for a in found.attributes if a.proposal is None}
    if len(alone) < 2:
        return found  # a pool of one is the attribute itself
    found.pooled_over = tuple(alone)
    found.pool = pooled_offer(alone, target)
    if found.pool is None:
        found.pool_needed = pool_labels_needed(alone, found.labelled_products, target)
        return found
    for attribute in found.attributes:
        if attribute.attribute in found.pool.members:
            attribute.proposal, attribute.pooled, attribute.needed = found.pool.point, True, 0
    return found


def _labelled_products(run: Run) -> int:
    """The run's products that carry a blind label."""
    blind = GoldValue.objects.filter(provenance=GoldValue.Provenance.BLIND)
    return run.work_items.filter(product__in=blind.values("product")).count()
