"""A long-lived Extractor's prefix caches stay within the bound its caller gives: the least recently
used schema's prefix is forgotten first, and a schema that comes back is prefilled again and decodes
exactly what it decoded before. The bound itself (extraction/engine/lru.py) keeps the entry in use."""

from __future__ import annotations

import pytest

from extraction.engine import modeling
from extraction.engine.api import AttributeSpec, Document, Extractor
from extraction.engine.lru import BoundedLRU
from tests.support.tiny_models import TEXTS

DOCS = [Document(f"sku-{i}", text) for i, text in enumerate(TEXTS)]
SCHEMAS = {
    "shoes": [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Color", "main colour", 3)],
    "tea": [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Count", "tea bags per box", 3)],
    "strings": [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Gauge", "string gauge", 3)],
}


def prefix_bytes(model_dir) -> dict[str, int]:
    probe = Extractor(model_dir)
    return {
        name: modeling.cache_bytes(probe.prefix_cache(probe.schema(specs))[0])
        for name, specs in SCHEMAS.items()
    }


def values(ex: Extractor, name: str) -> list[dict[str, tuple[str, float]]]:
    results, _ = ex.extract(DOCS, SCHEMAS[name], stack=2, rows=2)
    return [{k: (v.text, v.confidence) for k, v in row.items()} for row in results]


def test_the_least_recently_used_prefix_goes_and_decodes_alike_when_its_schema_comes_back(model_dir):
    sizes = prefix_bytes(model_dir)
    bound = sum(sizes.values()) - 1  # any two prefixes fit, the three do not
    ex = Extractor(model_dir, prefix_cache_bytes=bound)

    first_tea = values(ex, "tea")
    values(ex, "shoes")
    assert ex.prefix_cache_held() == (2, sizes["tea"] + sizes["shoes"])
    values(ex, "tea")  # tea is now the more recently used of the two
    values(ex, "strings")  # over the bound: shoes, used longest ago, goes
    held, held_bytes = ex.prefix_cache_held()
    assert held == 2 and held_bytes == sizes["tea"] + sizes["strings"] <= bound

    assert ex.prefix_cache(ex.schema(SCHEMAS["tea"]))[1] == 0  # still cached: no forward spent
    assert ex.prefix_cache(ex.schema(SCHEMAS["shoes"]))[1] == 1  # forgotten: prefilled again
    assert ex.prefix_cache_held() == (2, sizes["tea"] + sizes["shoes"])  # strings made room

    values(ex, "strings")  # strings back, tea (least recent now) goes
    again = values(ex, "tea")  # and back again: prefilled anew
    assert again == first_tea


def test_the_bound_forgets_the_oldest_first_and_keeps_the_entry_in_use_even_alone_over_it():
    cache = BoundedLRU(10, size_of=len)
    assert cache.put("a", "xxxx") == [] and cache.put("b", "xxxx") == []
    assert cache.get("a") == "xxxx"  # a is the more recently used now
    assert cache.put("c", "xxxx") == [("b", "xxxx")]
    assert cache.keys() == ["a", "c"] and cache.total == 8
    assert cache.make_room(4) == [("a", "xxxx")]  # room made before a value is built
    assert cache.put("big", "x" * 25) == [("c", "xxxx")]
    assert cache.keys() == ["big"] and cache.total == 25  # the one in use stays
    with pytest.raises(ValueError, match="cannot be negative"):
        BoundedLRU(-1)
