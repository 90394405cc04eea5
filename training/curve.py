"""The learning curve a catalog's model page draws: the points `manage.py learning_curve` stored for
the same AVE file (and the same scoring share), F1 on the products nobody reviewed before training and after, per N reviewed
and per order ("most useful first" against random). Several seeds at one N are averaged."""

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


def curve_chart(points: list[LearningCurvePoint]) -> Chart | None:
    """Per N reviewed, each order's F1 before and after training on the products it left unreviewed
    (the orders leave different products, so each has its own "before")."""
    if not points:
        return None
    sizes = sorted({p.n_reviewed for p in points})
    table = defaultdict(list)
    for p in points:
        table[(p.order, "before", p.n_reviewed)].append(p.f1_before)
        table[(p.order, "after", p.n_reviewed)].append(p.f1_after)

    def series(order, when):
        return [mean(table[(order, when, n)]) if table.get((order, when, n)) else None for n in sizes]

    return grouped_bars(
        f"F1 on {points[0].scored_on}, {points[0].data_name} (standard metric)",
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
