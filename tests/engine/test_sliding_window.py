"""Gemma 3's sliding layers in decoding. With a window narrower than every document's span (the
prefix alone is longer), HPD on stacked rows equals, token for token, a per-value reference decode
whose sliding layers hide keys `window` or more positions back, the cut training makes
(losses.training_hidden). The reference builds its masks here from the positions, apart from
masks.py, and recomputes the whole sequence at every step (no cache). Under both attention paths;
without the cut the values differ (negative control)."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import layout, modeling
from extraction.engine.decode import block_attention, dense_attention, hpd
from tests.support.tiny_models import (
    DEVICE,
    TEXTS,
    frequent_terminator,
    run_hpd,
    tiny_model,
    value_alone_layout,
    with_terminator,
)

WINDOW = 12
ATTRS = [
    layout.AttributeSpec("Brand", max_tokens=5),
    layout.AttributeSpec("Color", "the main colour", 3),
    layout.AttributeSpec("Size", max_tokens=6),
]


@pytest.fixture(scope="module")
def windowed(tokenizer):
    model = tiny_model("gemma3_text", tokenizer, sliding_window=WINDOW)
    assert modeling.cut_window(model.config) == WINDOW
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS[:3]]
    assert (
        len(schema.prefix_ids) > WINDOW
    )  # every value's query is further than the window from the prefix's start
    return model, with_terminator(schema, frequent_terminator(model, schema, docs)), docs


def additive(ok: torch.Tensor) -> torch.Tensor:
    return torch.zeros(ok.shape, device=ok.device).masked_fill(~ok, torch.finfo(torch.float32).min)[
        None, None
    ]


@torch.no_grad()
def windowed_reference(model, schema, doc, n) -> tuple[list[int], bool]:
    """Greedy decode of value n alone (prefix + doc + keys 0..n: value_alone_layout) with causal
    full layers and sliding layers cut at WINDOW positions back."""
    lay = value_alone_layout(schema, doc, n)
    ids, pos = list(lay.input_ids), list(lay.position_ids)
    start, gap, out = lay.slot_start[0][n], schema.attributes[n].max_tokens, []
    for k in range(gap + 1):
        p = torch.tensor(pos, device=DEVICE)
        causal = torch.ones(len(ids), len(ids), dtype=torch.bool, device=DEVICE).tril()
        near = (p[:, None] - p[None, :]) < WINDOW
        hidden = model.base_model(
            input_ids=torch.tensor([ids], device=DEVICE),
            position_ids=p[None],
            attention_mask={"full_attention": additive(causal), "sliding_attention": additive(causal & near)},
            use_cache=False,
        ).last_hidden_state
        tok = int(modeling.logprobs(model, hidden[:, -1]).argmax())
        if tok == schema.terminator:
            return out, False
        if k == gap:
            return out, True
        out.append(tok)
        ids.append(tok)
        pos.append(start + k)
    raise AssertionError("unreachable")


def windowed_mismatches(model, schema, docs, values) -> list[tuple[int, int]]:
    return [
        (d, n)
        for d, doc in enumerate(docs)
        for n in range(len(schema.attributes))
        if (values[d][n].ids, values[d][n].truncated) != windowed_reference(model, schema, doc, n)
    ]


@pytest.mark.parametrize("attention", ["blocks", "dense"])
def test_hpd_under_a_narrow_window_matches_the_windowed_reference(windowed, attention):
    model, schema, docs = windowed
    values = run_hpd(model, schema, docs, stack=2, rows=2, attention=attention)
    assert windowed_mismatches(model, schema, docs, values) == []
    flat = [v for row in values for v in row]
    assert any(v.truncated for v in flat) and any(not v.truncated for v in flat)  # both endings ran


UNCUT = {
    "prefix": (hpd, "cut_window", lambda config: None),
    "blocks": (block_attention.BlockPlan, "_windowed", lambda self, holder, window: holder),
    "dense": (dense_attention, "cut_window", lambda config: None),
}


@pytest.mark.parametrize("attention, uncut", [("blocks", "prefix"), ("blocks", "blocks"), ("dense", "dense")])
def test_negative_control_one_part_without_the_cut_changes_the_values(
    windowed, attention, uncut, monkeypatch
):
    """The shared prefix's prefill, or the rows' prefill and steps of one attention path, without
    the cut: each alone is enough to change values."""
    model, schema, docs = windowed
    monkeypatch.setattr(*UNCUT[uncut])
    values = run_hpd(model, schema, docs, stack=2, rows=2, attention=attention)
    assert windowed_mismatches(model, schema, docs, values) != []


@pytest.mark.parametrize("constrained", [False, True])
def test_ar_from_the_cut_prefix_cache_writes_what_ar_computing_the_prompt_whole_writes(
    windowed, tokenizer, constrained
):
    """AR-JSON decodes under the model's own masks (transformers cuts its sliding layers itself,
    counting cache places); the shared prefix it starts from is the engine's prefill, cut by
    masks.per_layer: one product a batch, the same output as AR computing the prompt whole, past
    the window. In a batch of mixed lengths a row's padding sits between the cached prefix and its
    document and transformers counts it toward the window (README: AR on Gemma 3)."""
    from extraction.engine.decode import ar
    from extraction.engine.decode.extractive import doc_index

    model, schema, docs = windowed
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    spans = [doc_index(tokenizer, t) for t in TEXTS[:3]] if constrained else None
    with torch.inference_mode():
        whole, _ = ar.generate_json(model, tokenizer, schema, docs, 1, spans=spans)
        cached, _ = ar.generate_json(model, tokenizer, schema, docs, 1, spans=spans, prefix_cache=prefix)
    assert [o.text for o in cached] == [o.text for o in whole]
    assert any(o.tokens > 0 for o in cached)


def test_negative_control_ar_from_an_uncut_prefix_cache_writes_otherwise(windowed, tokenizer, monkeypatch):
    from extraction.engine.decode import ar

    model, schema, docs = windowed
    monkeypatch.setattr(*UNCUT["prefix"])
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    with torch.inference_mode():
        whole, _ = ar.generate_json(model, tokenizer, schema, docs, 1)
        cached, _ = ar.generate_json(model, tokenizer, schema, docs, 1, prefix_cache=prefix)
    assert [o.text for o in cached] != [o.text for o in whole]
