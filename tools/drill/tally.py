"""What a drill's run left in PostgreSQL: values every product that did not fail must have, against
what is stored (lost, duplicated)."""

from dataclasses import asdict, dataclass

from django.db.models import Count

from catalog.models import Attribute
from extraction.models import ExtractedValue, Run, WorkItem


@dataclass
class Tally:
    products: int
    values_expected: int
    values_stored: int
    lost: int
    duplicated: int
    failed: int
    seconds: float

    def as_dict(self) -> dict:
        return asdict(self)


def tally(run: Run, seconds: float) -> Tally:
    """Values every product that did not fail must have, against what PostgreSQL holds.

    lost: expected (product, attribute) pairs with no row; duplicated: extra rows for one pair plus
    extra result writes of one product (a product decoded and written twice).
    """
    items = WorkItem.objects.filter(run=run)
    attrs_per_schema = dict(
        Attribute.objects.filter(schema__in=items.values("schema"))
        .values_list("schema")
        .annotate(n=Count("id"))
    )
    expected = 0
    extra_writes = 0
    for schema_id, status, writes in items.values_list("schema_id", "status", "writes"):
        if status != WorkItem.Status.FAILED:
            expected += attrs_per_schema.get(schema_id, 0)
        extra_writes += max(0, writes - 1) * attrs_per_schema.get(schema_id, 0)
    values = ExtractedValue.objects.filter(run=run).exclude(
        product__in=items.filter(status=WorkItem.Status.FAILED).values("product")
    )
    stored = values.count()
    distinct = values.values("product", "attribute").distinct().count()
    return Tally(
        products=items.count(),
        values_expected=expected,
        values_stored=stored,
        lost=expected - distinct,
        duplicated=(stored - distinct) + extra_writes,
        failed=items.filter(status=WorkItem.Status.FAILED).count(),
        seconds=round(seconds, 2),
    )
