"""Quality and cost of runs: micro F1 against gold (the engine's metric), speed, and cost.

The F1 comes from extraction.engine.metric, the one implementation the CLI and the tests use;
this module only gathers the (category, attribute, prediction, gold) pairs from the database.
"""

from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import OuterRef, Subquery

from extraction.engine import metric
from extraction.models import Run
from review.filters import partner_of
from review.models import GoldValue

SECONDS_PER_HOUR = 3600
PRODUCTS_PER_COST_UNIT = 1000


def gold_pairs(run: Run) -> list[tuple[str, str, str, list[str]]]:
    """(category, attribute, prediction, [gold]) for every value of `run` whose attribute has gold."""
    gold = GoldValue.objects.filter(
        product=OuterRef("product"),
        attribute_name=OuterRef("attribute__name"),
        schema=OuterRef("attribute__schema"),
    ).values("value")[:1]
    rows = (
        run.values.annotate(gold_value=Subquery(gold))
        .filter(gold_value__isnull=False)
        .values_list("product__category__name", "attribute__name", "value", "gold_value")
    )
    return [
        (category, attribute, pred, [gold_value]) for category, attribute, pred, gold_value in rows.iterator()
    ]


def run_report(run: Run) -> metric.Report:
    return metric.evaluate(gold_pairs(run))


@dataclass
class Speed:
    products: int
    seconds: float
    products_per_second: float | None
    steps_per_product: float | None
    tokens_per_step: float | None
    cost_per_1000: float | None


def run_speed(run: Run, price_per_hour: float) -> Speed:
    """Speed from the run's counters; engine time is what the GPU was busy, so it prices the run."""
    seconds = run.engine_seconds
    if not seconds and run.started_at and run.finished_at:
        seconds = (run.finished_at - run.started_at).total_seconds()
    products = run.done
    per_second = products / seconds if products and seconds else None
    return Speed(
        products=products,
        seconds=seconds,
        products_per_second=per_second,
        steps_per_product=run.forward_steps / products if products else None,
        tokens_per_step=run.tokens_decoded / run.forward_steps if run.forward_steps else None,
        cost_per_1000=(
            price_per_hour * PRODUCTS_PER_COST_UNIT / per_second / SECONDS_PER_HOUR if per_second else None
        ),
    )


def default_price() -> Decimal:
    return Decimal(str(settings.GPU_PRICE_PER_HOUR)).quantize(Decimal("0.01"))


@dataclass
class Column:
    """One run on the dashboard: its quality and speed."""

    run: Run
    report: metric.Report
    speed: Speed


def comparison(run: Run, price_per_hour: float) -> list[Column]:
    """The run and its linked run (HPD and AR side by side), HPD first."""
    partner = partner_of(run)
    runs = [run] if partner is None else [run, partner]
    runs.sort(key=lambda r: r.decoder != Run.Decoder.HPD)
    return [Column(r, run_report(r), run_speed(r, price_per_hour)) for r in runs]
