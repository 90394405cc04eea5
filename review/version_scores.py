"""Each model version's F1 on blind gold, for the menus and pages that offer versions.

It lives with review's quality figures (it reads their gold pairs); the registry below only names
versions, and the run form fetches these scores from here (an htmx fragment) rather than importing
review from extraction.
"""

from dataclasses import dataclass

from catalog.models import Catalog
from extraction.engine import metric
from extraction.models import Run
from registry.models import ModelVersion
from review.bootstrap import f1_interval
from review.quality import Scope, decoded_products, gold_pairs, pair_rows, per_product_counts


@dataclass
class BlindScore:
    """A version's F1 on blind gold: of its newest finished run over the catalog's products."""

    run: Run | None
    f1: float | None
    interval: tuple[float, float] | None
    products: int


def blind_score(version: ModelVersion, catalog: Catalog | None) -> BlindScore:
    if version.pk is None:
        return BlindScore(None, None, None, 0)  # the shipped default before any run used it
    runs = Run.objects.filter(status=Run.Status.DONE, model_version=version).order_by("-finished_at", "-id")
    if catalog is not None:
        runs = runs.filter(catalog=catalog)
    for run in runs[:5]:
        pairs = gold_pairs(run, Scope(frozenset(decoded_products(run))))
        if pairs:
            per_product = per_product_counts(pairs)
            f1 = metric.evaluate(pair_rows(pairs)).micro.f1
            return BlindScore(run, f1, f1_interval(per_product), len(per_product))
    return BlindScore(None, None, None, 0)
