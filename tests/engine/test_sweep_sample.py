"""The settings sweep decodes whole chunks of the main run, so that the batch sizes it compares
differ on it (decoder_runs.sweep_sample)."""

from collections import Counter

from extraction.engine.data import Product
from extraction.engine.evaluate.decoder_runs import sweep_sample


def catalog(categories: int, per_category: int) -> list[Product]:
    return [
        Product(f"{c}-{i}", f"cat{c}", f"product {i}", {})
        for c in range(categories)
        for i in range(per_category)
    ]


def test_the_sweep_takes_whole_chunks_of_few_categories_not_a_few_products_of_each():
    products = catalog(10, 25)
    sample = sweep_sample(products, 48, 32)
    per_category = Counter(p.category for p in sample)
    assert len(sample) == 48
    # 2 categories of 24: batches of 16 and of 64 are different calls on them
    assert sorted(per_category.values()) == [24, 24]
    assert len(per_category) == 2 and "cat0" in per_category and "cat5" in per_category


def test_a_chunk_never_holds_more_than_the_main_runs_chunk():
    sample = sweep_sample(catalog(4, 40), 60, 16)
    per_category = Counter(p.category for p in sample)
    assert len(per_category) == 4 and max(per_category.values()) == 15
    # fewer categories than the limit needs: every one of them, a chunk each
    sample = sweep_sample(catalog(3, 40), 100, 16)
    assert Counter(p.category for p in sample) == {"cat0": 16, "cat1": 16, "cat2": 16}


def test_no_limit_or_a_limit_past_the_file_keeps_every_product():
    products = catalog(3, 5)
    assert sweep_sample(products, 0, 32) == products
    assert sweep_sample(products, 15, 32) == products
