"""The run benchmark's real catalog: the demo catalog's products one category after the other, so
that any prefix holds every category, repeating under new SKUs past the demo's size."""

import pytest

from catalog.models import Product
from tools.bench.catalogs import DEMO_CATALOG, demo_bench_catalog

pytestmark = pytest.mark.django_db


def test_a_prefix_of_the_bench_catalog_holds_every_demo_category():
    small = demo_bench_catalog("Bench demo (20)", 20)
    demo = Product.objects.filter(catalog__name=DEMO_CATALOG)
    categories = set(demo.values_list("category", flat=True))
    assert len(categories) == 10 and demo.count() == 400
    assert small.products.count() == 20
    assert set(small.products.values_list("category", flat=True)) == categories  # 2 of each
    assert {p.sku: p.title for p in small.products.all()}.items() <= {p.sku: p.title for p in demo}.items()


def test_past_the_demo_size_titles_repeat_under_new_skus_and_a_second_call_adds_nothing():
    big = demo_bench_catalog("Bench demo (450)", 450)
    skus = list(big.products.values_list("sku", flat=True))
    assert len(skus) == len(set(skus)) == 450
    repeats = [s for s in skus if s.endswith("~2")]
    assert len(repeats) == 50
    original = Product.objects.get(catalog__name=DEMO_CATALOG, sku=repeats[0].removesuffix("~2"))
    assert big.products.get(sku=repeats[0]).title == original.title
    assert demo_bench_catalog("Bench demo (450)", 450).products.count() == 450
