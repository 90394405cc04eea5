"""The learning curve a catalog's model page draws: the points `manage.py learning_curve` stored for
the same AVE file (and the same scoring share), F1 on the products nobody reviewed before training and after, per N reviewed
and per order ("most useful first" against random), by the standard metric and as a reviewer types gold
(where reviewed gold teaches most: the catalog's "n/a"). Several seeds at one N are averaged."""

from collections import defaultdict
from statistics import mean

from catalog.models import Catalog
from review.charts import Chart, grouped_bars
from training.models import LearningCurvePoint

Order = LearningCurvePoint.Order


def curve_points(catalog: Catalog) -> list[LearningCurvePoint]:
    """Every point of the file this catalog's point was made from; [] for an ordinary catalog."""
    point = LearningCurvePoint.objects.filter(catalog=catalog).first()
    if point is None:
        return []
    same_curve = LearningCurvePoint.objects.filter(data_name=point.data_name, score_share=point.score_share)
    return list(same_curve.select_related("catalog"))


# metric -> (the chart's words, the point's fields before and after)
METRICS = {
    "standard": ("standard metric", "f1_before", "f1_after"),
    "typed": ("as a reviewer types gold", "typed_before", "typed_after"),
}


def curve_charts(points: list[LearningCurvePoint]) -> list[Chart]:
    """The standard metric's chart, then the typed one where any point has it (older points do not)."""
    charts = [curve_chart(points, metric) for metric in METRICS]
    return [chart for chart in charts if chart is not None]


def curve_chart(points: list[LearningCurvePoint], metric: str = "standard") -> Chart | None:
    """Per N reviewed, each order's F1 before and after training on the products it scores (without
    a scoring share the orders leave different products, so each has its own "before")."""
    words, before, after = METRICS[metric]
    points = [p for p in points if getattr(p, before) is not None]
    if not points:
        return None
    sizes = sorted({p.n_reviewed for p in points})
    table = defaultdict(list)
    for p in points:
        table[(p.order, "before", p.n_reviewed)].append(getattr(p, before))
        table[(p.order, "after", p.n_reviewed)].append(getattr(p, after))

    def series(order, when):
        return [mean(table[(order, when, n)]) if table.get((order, when, n)) else None for n in sizes]

    return grouped_bars(
        f"F1 on {points[0].scored_on}, {points[0].data_name} ({words})",
        [f"{n} reviewed" for n in sizes],
        [
            ("most useful first: before", series(Order.USEFUL, "before")),
            ("most useful first: after", series(Order.USEFUL, "after")),
            ("random order: before", series(Order.RANDOM, "before")),
            ("random order: after", series(Order.RANDOM, "after")),
        ],
        scale=1.0,
        fmt="{:.3f}",
    )
