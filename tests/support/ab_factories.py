"""A/B test setups: two finished runs (HPD and AR) with values over the same products, and campaigns."""

from dataclasses import dataclass

from catalog.models import Attribute, Catalog, Product
from evaluation.campaigns import CampaignSpec, do_create_campaign
from evaluation.models import Campaign, System
from evaluation.systems import system_for_run
from extraction.models import Run
from tests.support.factories import make_catalog, make_product, make_run, make_schema, make_values

ATTRIBUTES = ("Brand", "Color", "Size")


@dataclass
class TwoRuns:
    catalog: Catalog
    products: list[Product]
    attributes: list[Attribute]
    hpd: Run
    ar: Run
    hpd_system: System
    ar_system: System


def hpd_value(product_number: int, attribute: str) -> str:
    return f"{attribute.lower()}-{product_number}"


def ar_value(product_number: int, attribute: str) -> str:
    """AR agrees with HPD on Brand, differs on Color for even products, and always differs on Size."""
    if attribute == "Size" or (attribute == "Color" and product_number % 2 == 0):
        return f"other-{attribute.lower()}-{product_number}"
    return hpd_value(product_number, attribute)


def make_two_runs(n_products: int = 12, category: str = "Shoes", same_values: bool = False) -> TwoRuns:
    """An HPD and an AR run over the same products; with same_values both runs say the same thing."""
    catalog = make_catalog()
    schema = make_schema(category, ATTRIBUTES)
    attributes = list(schema.attributes.order_by("position"))
    products = [
        make_product(catalog, schema.category, title=f"Trail runner {i}", description=f"A shoe, number {i}.")
        for i in range(n_products)
    ]
    hpd = make_run(products, schema, decoder=Run.Decoder.HPD, name="Zephyr fast pass")
    ar = make_run(products, schema, decoder=Run.Decoder.AR, name="Boreal slow pass")
    make_values(
        hpd, {(p, a): (hpd_value(i, a.name), 0.9) for i, p in enumerate(products) for a in attributes}
    )
    second = hpd_value if same_values else ar_value
    make_values(ar, {(p, a): (second(i, a.name), 0.4) for i, p in enumerate(products) for a in attributes})
    return TwoRuns(catalog, products, attributes, hpd, ar, system_for_run(hpd), system_for_run(ar))


def make_campaign(
    runs: TwoRuns,
    size: int | None = None,
    seed: int = 7,
    raters_per_item: int = 2,
    raters=(),
    name="Shoe check",
) -> Campaign:
    spec = CampaignSpec(
        name=name,
        first=runs.hpd_system,
        second=runs.ar_system,
        sample_size=size or len(runs.products),
        seed=seed,
        raters_per_item=raters_per_item,
        raters=tuple(raters),
    )
    return do_create_campaign(spec)
