"""Precision as a function of the confidence threshold, and the threshold that reaches a target.

Auto-accept ("accept every pending value with confidence at least t") is only as good as this
estimate. It comes from the values people judged on runs of the same model and decoder: one by one in
the queue (accepted = the model was right, corrected = it was wrong) or by labelling the product
blind (right when the value is the label; blind labels are the judgement least swayed by the
model). Bulk and auto-accepted values are left out, so auto-accept never confirms itself. Until
there are MIN_JUDGED of those, the estimate comes from
the dev figures the model's slotwise.json carries (calibration -> precision_curve -> decoder).
Intervals are Wilson 95% (calibration.wilson), as on the dev side.
"""

from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from extraction import config
from extraction.engine import metric
from extraction.engine.calibration import CURVE_THRESHOLDS, wilson
from extraction.models import ExtractedValue, Run
from review.models import GoldValue, ValueEvent, ValueReview

# Below this many judged values of a model the dev figures are the better estimate.
MIN_JUDGED = 200
# A threshold above which fewer judged values lie says too little to be proposed.
MIN_AT_THRESHOLD = 30
# The thresholds the page tabulates for reviewed values, the dev curve's (the proposal may fall between them).
GRID = CURVE_THRESHOLDS
REVIEWED, DEV = "reviewed", "dev"
SOURCE_LABELS = {REVIEWED: "reviewed values of this model", DEV: "dev figures of this model"}
# The history actions that mean a person looked at this one value.
JUDGED_BY_HAND = (ValueEvent.Action.ACCEPT, ValueEvent.Action.CORRECT, ValueEvent.Action.SET_NA)
Status = ValueReview.Status


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


@dataclass(frozen=True)
class Estimate:
    source: str  # REVIEWED or DEV, or "" when neither could say anything
    judged: int  # values of this model and decoder a person judged (by hand or blind)
    curve: list[Point]  # for the page's table
    proposal: Point | None  # the lowest threshold reaching the target; None when none does
    note: str = ""  # why there is no estimate, or what to keep in mind

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, "")


def judged_values(run: Run) -> list[tuple[float, bool]]:
    """(confidence, right) for each value of runs with `run`'s model (name and revision) and
    decoder that a person judged: accepted or corrected by hand, else labelled blind."""
    same_model = ExtractedValue.objects.filter(
        run__decoder=run.decoder,
        run__model_name=run.model_name,
        run__model_revision=run.model_revision,
    )
    last_action = ValueEvent.objects.filter(value=OuterRef("pk")).order_by("-at", "-id").values("action")[:1]
    by_hand = (
        same_model.filter(review__status__in=(Status.ACCEPTED, Status.CORRECTED))
        .annotate(last_action=Subquery(last_action))
        .filter(last_action__in=JUDGED_BY_HAND)
    )
    pairs = [
        (c, status == Status.ACCEPTED) for c, status in by_hand.values_list("confidence", "review__status")
    ]
    label = GoldValue.objects.filter(
        provenance=GoldValue.Provenance.BLIND,
        product=OuterRef("product"),
        attribute_name=OuterRef("attribute__name"),
        schema=OuterRef("attribute__schema"),
    ).values("value")[:1]
    labelled = (
        same_model.exclude(pk__in=by_hand.values("pk"))
        .annotate(label=Subquery(label))
        .filter(label__isnull=False)
        .values_list("confidence", "value", "label")
    )
    # Accepting the value is right when it is the label, an n/a included.
    pairs += [(c, metric.outcome(value, [gold]) in ("VC", "NN")) for c, value, gold in labelled]
    return pairs


def reviewed_curve(pairs: list[tuple[float, bool]], thresholds) -> list[Point]:
    """Points at `thresholds` from (confidence, right) pairs; thresholds no value reaches are left out."""
    points = []
    for t in thresholds:
        chosen = [right for confidence, right in pairs if confidence >= t]
        if chosen:
            right = sum(chosen)
            points.append(Point(t, right / len(chosen), len(chosen), *wilson(right, len(chosen))))
    return points


def lowest_reaching(pairs: list[tuple[float, bool]], target: float) -> Point | None:
    """The lowest stored confidence t whose values >= t reach `target` precision, with at least
    MIN_AT_THRESHOLD values above it: the threshold that accepts the most at that precision."""
    ordered = sorted(pairs, key=lambda p: -p[0])
    best = None
    right = 0
    for i, (confidence, ok) in enumerate(ordered):
        right += ok
        n = i + 1
        if n < len(ordered) and ordered[n][0] == confidence:
            continue  # a threshold takes every value of its confidence
        if n >= MIN_AT_THRESHOLD and right / n >= target:
            best = (confidence, right, n)
    if best is None:
        return None
    t, right, n = best
    return Point(t, right / n, n, *wilson(right, n))


def estimate(run: Run, target: float) -> Estimate:
    """Precision by threshold for `run`'s model and decoder, and the threshold proposed for `target`."""
    pairs = judged_values(run)
    if len(pairs) >= MIN_JUDGED:
        proposal = lowest_reaching(pairs, target)
        note = "" if proposal else f"no threshold reaches {percent(target)} on the {len(pairs)} judged values"
        return Estimate(REVIEWED, len(pairs), reviewed_curve(pairs, GRID), proposal, note)
    fewer = f"only {len(pairs)} values of this model are judged (the estimate uses them from {MIN_JUDGED} on)"
    try:
        rows = config.dev_precision_curve(config.run_model_path(run.model_dir), run.decoder)
    except config.NoPrecisionCurve as exc:
        return Estimate("", len(pairs), [], None, f"No estimate: {fewer}, and {exc}.")
    curve = [Point(*row) for row in rows]
    reaching = [p for p in curve if p.precision >= target]
    proposal = min(reaching, key=lambda p: p.threshold) if reaching else None
    note = f"{fewer}; until then the dev figures stand in, measured on the dev sets, not on this catalog"
    if proposal is None:
        note += f"; no threshold reaches {percent(target)} there"
    return Estimate(DEV, len(pairs), curve, proposal, note)
