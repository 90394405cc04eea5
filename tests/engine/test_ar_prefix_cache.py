"""AR-JSON with the shared prefix prefilled once (the honest baseline: serving engines cache a shared
prefix) must write exactly what AR computing every prompt whole writes, free and constrained, in
every model family, with padding between prefix and document in batches of mixed lengths."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import layout
from extraction.engine.decode import ar, hpd
from extraction.engine.decode.extractive import doc_index
from tests.support.tiny_models import ATTRS, DEVICE, FAMILIES, TEXTS, tiny_model


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("constrained", [False, True])
def test_prefix_cached_ar_writes_what_uncached_ar_writes(tokenizer, family, constrained):
    model = tiny_model(family, tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    assert len({len(d) for d in docs}) > 1  # mixed lengths: rows are padded after the prefix
    spans = [doc_index(tokenizer, t) for t in TEXTS] if constrained else None
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    with torch.inference_mode():
        whole, _ = ar.generate_json(model, tokenizer, schema, docs, 3, spans=spans)
        cached, _ = ar.generate_json(model, tokenizer, schema, docs, 3, spans=spans, prefix_cache=prefix)
    assert [o.text for o in cached] == [o.text for o in whole]
    for a, b in zip(cached, whole, strict=True):
        assert [v.text for v in a.values.values()] == [v.text for v in b.values.values()]
        for va, vb in zip(a.values.values(), b.values.values(), strict=True):
            assert va.confidence == pytest.approx(vb.confidence, abs=1e-5)
    assert any(o.tokens > 0 for o in cached)


def test_the_prefix_cache_is_not_changed_by_a_batch(tokenizer):
    model = tiny_model("llama", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    before = prefix.get_seq_length()
    with torch.inference_mode():
        first, _ = ar.generate_json(model, tokenizer, schema, docs, 2, prefix_cache=prefix)
        again, _ = ar.generate_json(model, tokenizer, schema, docs, 2, prefix_cache=prefix)
    assert prefix.get_seq_length() == before == len(schema.prefix_ids)
    assert [o.text for o in again] == [o.text for o in first]


def test_prompt_lookup_refuses_a_prefix_cache(tokenizer):
    model = tiny_model("llama", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    with pytest.raises(ValueError, match="prompt lookup cannot start from a prefix cache"):
        ar.generate_json(
            model, tokenizer, schema, [layout.doc_ids(tokenizer, TEXTS[0])], 1, 3, prefix_cache=prefix
        )
