"""The learning curve a catalog's model page draws: the points `manage.py learning_curve` stored for
the same AVE file, F1 on the products nobody reviewed before training and after, per N reviewed
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
    return list(LearningCurvePoint.objects.filter(data_name=point.data_name).select_related("catalog"))


def curve_chart(points: list[LearningCurvePoint]) -> Chart | None:
    if not points:
        return None
    sizes = sorted({p.n_reviewed for p in points})
    before, after = defaultdict(list), defaultdict(list)
    for p in points:
        before[p.n_reviewed].append(p.f1_before)
        after[(p.order, p.n_reviewed)].append(p.f1_after)

    def averaged(table, key):
        return mean(table[key]) if table.get(key) else None

    return grouped_bars(
        f"F1 on the products nobody reviewed, {points[0].data_name}",
        [f"{n} reviewed" for n in sizes],
        [
            ("before training", [averaged(before, n) for n in sizes]),
            ("after, most useful first", [averaged(after, (Order.USEFUL, n)) for n in sizes]),
            ("after, random order", [averaged(after, (Order.RANDOM, n)) for n in sizes]),
        ],
        scale=1.0,
        fmt="{:.3f}",
    )
