"""Quality and cost of runs: micro F1 against honest gold (the engine's metric), with a bootstrap
interval, calibration of the stored confidences, speed, and cost on the device the run used.

Honest gold: a run is scored only on gold it did not supply. Gold made by accepting or correcting
a run's value (review/gold.py) says which run that was; that run's F1 leaves it out, every other
run's F1 counts it. Blind labels and the catalog's known values count for every run.
The F1 comes from extraction.engine.metric and the ECE from extraction.engine.calibration, the
implementations the CLI and the tests use; this module only gathers the pairs from the database.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import NamedTuple

from django.conf import settings
from django.db.models import OuterRef, Q, Subquery

from extraction.engine import calibration, metric
from extraction.models import Run
from review.bootstrap import MIN_PRODUCTS, f1_interval
from review.filters import partner_of
from review.models import GoldValue

SECONDS_PER_HOUR = 3600
PRODUCTS_PER_COST_UNIT = 1000
Provenance = GoldValue.Provenance
GPU, CPU = "gpu", "cpu"
DEVICE_NAMES = {GPU: "GPU", CPU: "CPU"}


class Pair(NamedTuple):
    """One value of a run with the honest gold of its (product, attribute)."""

    product_id: int
    category: str
    attribute: str
    prediction: str
    confidence: float
    gold: str
    provenance: str


def honest_gold_for(run: Run):
    """The gold `run` did not supply: blind labels, catalog values, other runs' values reviewed."""
    return GoldValue.objects.filter(Q(from_run__isnull=True) | ~Q(from_run=run.pk))


def gold_pairs(run: Run, scope: "Scope | None" = None) -> list[Pair]:
    """Every value of `run` whose (product, attribute, schema) has gold the run did not supply;
    within `scope` (two runs compared) only blind gold of the products both decoded."""
    gold = honest_gold_for(run)
    values = run.values.all()
    if scope is not None:
        gold = gold.filter(provenance=Provenance.BLIND)
        values = values.filter(product_id__in=scope.products)
    gold = gold.filter(
        product=OuterRef("product"),
        attribute_name=OuterRef("attribute__name"),
        schema=OuterRef("attribute__schema"),
    )
    rows = (
        values.annotate(
            gold_value=Subquery(gold.values("value")[:1]),
            gold_provenance=Subquery(gold.values("provenance")[:1]),
        )
        .filter(gold_value__isnull=False)
        .values_list(
            "product_id",
            "product__category__name",
            "attribute__name",
            "value",
            "confidence",
            "gold_value",
            "gold_provenance",
        )
    )
    return [Pair(*row) for row in rows.iterator()]


def pair_rows(pairs: list[Pair]):
    return ((p.category, p.attribute, p.prediction, [p.gold]) for p in pairs)


@dataclass
class GoldUsed:
    """How many gold values a run's F1 rests on, of which kinds, and how many it left out."""

    total: int
    by_kind: list[tuple[str, int]]  # (provenance label, count), largest first
    left_out: int  # gold this run supplied itself (its own values accepted or corrected)


def gold_used(run: Run, pairs: list[Pair]) -> GoldUsed:
    labels = dict(Provenance.choices)
    kinds = Counter(p.provenance for p in pairs)
    return GoldUsed(
        total=len(pairs),
        by_kind=[(labels[kind], n) for kind, n in kinds.most_common()],
        left_out=GoldValue.objects.filter(from_run=run).count(),
    )


def per_product_counts(pairs: list[Pair]) -> list[metric.Counts]:
    counts: dict[int, metric.Counts] = defaultdict(metric.Counts)
    for p in pairs:
        counts[p.product_id].add(metric.outcome(p.prediction, [p.gold]))
    return list(counts.values())


@dataclass
class Bin:
    low: float
    high: float
    values: int
    mean_confidence: float | None
    share_correct: float | None


@dataclass
class Calibration:
    """Stored confidences against the share correct on honest gold, in calibration.BINS bins."""

    bins: list[Bin]
    ece: float | None
    values: int


def bin_of(confidence: float) -> int:
    """The bin calibration.ece puts a confidence in: k/BINS <= c < (k+1)/BINS, 1.0 in the last."""
    return min(max(int(confidence * calibration.BINS), 0), calibration.BINS - 1)


def run_calibration(pairs: list[Pair]) -> Calibration:
    """As extraction.engine.calibration measures it: the non-n/a predictions of judged pairs,
    correct iff VC. The confidence is used as stored (the engine calibrated it when decoding)."""
    judged = [p for p in pairs if not metric.is_na(p.prediction)]
    confidences = [p.confidence for p in judged]
    correct = [metric.outcome(p.prediction, [p.gold]) == "VC" for p in judged]
    grouped: dict[int, list[tuple[float, bool]]] = defaultdict(list)
    for c, right in zip(confidences, correct, strict=True):
        grouped[bin_of(c)].append((c, right))
    bins = []
    for b in range(calibration.BINS):
        points = grouped.get(b, [])
        n = len(points)
        bins.append(
            Bin(
                low=b / calibration.BINS,
                high=(b + 1) / calibration.BINS,
                values=n,
                mean_confidence=sum(c for c, _ in points) / n if n else None,
                share_correct=sum(r for _, r in points) / n if n else None,
            )
        )
    return Calibration(bins=bins, ece=calibration.ece(confidences, correct), values=len(judged))


def device_kind(run: Run) -> str | None:
    """gpu or cpu, from the device the worker recorded (decode_settings["device"]); None when no
    worker has recorded one (the run never started)."""
    device = str(run.decode_settings.get("device") or "").lower()
    if device.startswith("cuda"):
        return GPU
    if device == CPU:
        return CPU
    return None


@dataclass
class Speed:
    products: int
    seconds: float
    products_per_second: float | None
    steps_per_product: float | None
    tokens_per_step: float | None
    device: str | None  # gpu, cpu, or None when not recorded
    price_per_hour: Decimal | None
    cost_per_1000: float | None

    @property
    def device_name(self) -> str:
        return DEVICE_NAMES.get(self.device, "device not recorded")


def run_speed(run: Run, prices: dict[str, Decimal]) -> Speed:
    """Speed from the run's counters; engine time is what the device was busy, so it prices the run
    at the hourly price of that kind of device."""
    seconds = run.engine_seconds
    if not seconds and run.started_at and run.finished_at:
        seconds = (run.finished_at - run.started_at).total_seconds()
    products = run.done
    per_second = products / seconds if products and seconds else None
    device = device_kind(run)
    price = prices.get(device) if device else None
    return Speed(
        products=products,
        seconds=seconds,
        products_per_second=per_second,
        steps_per_product=run.forward_steps / products if products else None,
        tokens_per_step=run.tokens_decoded / run.forward_steps if run.forward_steps else None,
        device=device,
        price_per_hour=price,
        cost_per_1000=(
            float(price) * PRODUCTS_PER_COST_UNIT / per_second / SECONDS_PER_HOUR
            if per_second and price is not None
            else None
        ),
    )


def default_prices() -> dict[str, Decimal]:
    """The hourly price of each device kind from settings (GPU_PRICE_PER_HOUR, CPU_PRICE_PER_HOUR)."""
    return {
        GPU: Decimal(str(settings.GPU_PRICE_PER_HOUR)).quantize(Decimal("0.01")),
        CPU: Decimal(str(settings.CPU_PRICE_PER_HOUR)).quantize(Decimal("0.01")),
    }


@dataclass
class Column:
    """One run on the dashboard: its quality on honest gold, its calibration, speed and cost."""

    run: Run
    report: metric.Report
    gold: GoldUsed
    products: int  # products the F1 rests on
    interval: tuple[float, float] | None  # None under bootstrap.MIN_PRODUCTS products
    calibration: Calibration
    speed: Speed

    @property
    def products_missing(self) -> int:
        """Products with gold still missing before an interval is given."""
        return max(MIN_PRODUCTS - self.products, 0)


def column(run: Run, prices: dict[str, Decimal], scope: "Scope | None" = None) -> Column:
    pairs = gold_pairs(run, scope)
    per_product = per_product_counts(pairs)
    return Column(
        run=run,
        report=metric.evaluate(pair_rows(pairs)),
        gold=gold_used(run, pairs),
        products=len(per_product),
        interval=f1_interval(per_product),
        calibration=run_calibration(pairs),
        speed=run_speed(run, prices),
    )


def comparison(run: Run, prices: dict[str, Decimal]) -> list[Column]:
    """The run and its linked run (HPD and AR side by side), HPD first."""
    partner = partner_of(run)
    runs = [run] if partner is None else [run, partner]
    runs.sort(key=lambda r: r.decoder != Run.Decoder.HPD)
    return [column(r, prices) for r in runs]


@dataclass(frozen=True)
class Scope:
    """Two runs compared: the products both decoded; each is scored on their blind labels only, so
    both rest on the very same gold whichever runs supplied other gold."""

    products: frozenset[int]

    @property
    def size(self) -> int:
        return len(self.products)


def decoded_products(run: Run) -> set[int]:
    return set(run.work_items.filter(status="done").values_list("product_id", flat=True))


def compared(first: Run, second: Run, prices: dict[str, Decimal]) -> tuple[Scope, list[Column]]:
    """Any two runs side by side on the blind gold of the products both decoded (old and new model,
    HPD and AR): the scope, and a column each."""
    scope = Scope(frozenset(decoded_products(first) & decoded_products(second)))
    return scope, [column(first, prices, scope), column(second, prices, scope)]
