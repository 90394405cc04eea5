"""Tiny random models, a small tokenizer's texts and the per-value reference decode of HPD.md
(greedy over [prefix + doc + keys 0..n] with the same position ids and a plain causal mask), for the
engine's tests: no downloads, no Django."""

from __future__ import annotations

import os
from collections import Counter

import pytest
import torch

from extraction.engine import layout, modeling
from extraction.engine.decode import hpd, masks
from tests.support.reference_constraints import constrain

# where the tiny models run: cpu here; scripts/gpu_check.sh runs the exactness tests with cuda
DEVICE = os.environ.get("SLOTWISE_TEST_DEVICE", "cpu")


FAMILIES = [
    "llama",
    "qwen2",
    "qwen3",
    "mistral",
    "phi3",
    "gpt_neox",
    "gemma",
    "granite",
    "olmo2",
    "stablelm",
    "starcoder2",
    "cohere",
    "gemma3_text",
]


# gemma's default head_dim (256) dwarfs a tiny model. gemma3_text (Gemma 3 270M's family): a sliding
# and a full layer, the window (512, as the real model's) wider than any test span, so the HPD mask
# is exact on both kinds; untied embeddings because a tiny random tied Gemma 3 writes one token
# everywhere, which would leave the early-end path untested
FAMILY_SIZE = {
    "gemma": {"head_dim": 16},
    "gemma3_text": {
        "head_dim": 16,
        "sliding_window": 512,
        "layer_types": ["sliding_attention", "full_attention"],
        "tie_word_embeddings": False,
    },
}


TEXTS = [
    "Diesel Men's Exposure High-Top Sneaker",
    "organic green tea 100 count, 2 pack",
    "Fender guitar strings 10-46 nickel",
    "Vitamin D3 1000 IU softgels",
]


ATTRS = [
    layout.AttributeSpec("Brand", max_tokens=5),
    layout.AttributeSpec("Color", "the main colour", 3),
    layout.AttributeSpec("Size", max_tokens=6),
]


TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "initializer_range": 0.2,
}


def tiny_model(family: str, tokenizer, attn: str = "sdpa", **kw):
    size = {**TINY, **FAMILY_SIZE.get(family, {}), **kw}
    if family == "gpt_neox":
        size.pop("num_key_value_heads")
    return modeling.random_model(family, tokenizer, attn=attn, seed=0, **size).to(DEVICE)


def with_terminator(schema: layout.SchemaPrompt, term: int) -> layout.SchemaPrompt:
    return layout.SchemaPrompt(schema.attributes, schema.prefix_ids, schema.key_ids, schema.end_ids, term)


def value_alone_layout(schema: layout.SchemaPrompt, doc: list[int], n: int) -> layout.HPDLayout:
    """The layout a per-value reference decodes value n in: prefix + doc + keys 0..n, one document."""
    sub = layout.SchemaPrompt(
        schema.attributes[: n + 1],
        schema.prefix_ids,
        schema.key_ids[: n + 1],
        schema.end_ids,
        schema.terminator,
    )
    return layout.build_hpd_layout(sub, [doc])


@torch.no_grad()
def reference_decode(
    model, schema: layout.SchemaPrompt, doc: list[int], n: int, state=None
) -> tuple[list[int], bool]:
    """Plain greedy decode of value n alone (prefix + doc + keys 0..n, causal mask) -> (value ids,
    truncated); with `state` (a slot rule's state), each step restricted to what it allows."""
    lay = value_alone_layout(schema, doc, n)
    device = next(model.parameters()).device
    ids, pos = torch.tensor([lay.input_ids], device=device), torch.tensor([lay.position_ids], device=device)
    T = ids.shape[1]
    cache = modeling.new_cache()

    def pick(hidden):
        lp = modeling.logprobs(model, hidden[:, -1])
        if state is not None:
            lp = constrain(lp, [state.allowed()])
        return modeling.greedy(lp)[0]

    tok = pick(
        modeling.forward_hidden(model, ids, pos, masks.causal_mask(1, T, T, model.dtype, device), cache)
    )
    start, gap, out = lay.slot_start[0][n], schema.attributes[n].max_tokens, []
    for k in range(gap + 1):
        if int(tok) == schema.terminator:
            return out, False
        if k == gap:
            return out, True
        out.append(int(tok))
        if state is not None:
            state.push(int(tok))
        T += 1
        mask = masks.causal_mask(1, 1, T, model.dtype, device)
        at = torch.tensor([[start + k]], device=device)
        tok = pick(modeling.forward_hidden(model, tok.view(1, 1), at, mask, cache))
    raise AssertionError("unreachable")


def run_hpd(
    model, schema, docs, stack: int, rows: int, counters=None, attention="blocks"
) -> list[list[hpd.SlotValue]]:
    """-> values[d][n] in document order."""
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    decoded = hpd.decode(
        model,
        schema,
        pc,
        hpd.hpd_rows(docs, len(schema.attributes), stack),
        rows,
        0,
        counters or hpd.Counters(),
        attention=attention,
    )
    return [[doc[n] for n in range(len(schema.attributes))] for doc in decoded]


def frequent_terminator(model, schema, docs) -> int:
    """A token the random model emits inside some values and not others: used as terminator so
    that some values end early and some fill their gap (both paths are exercised)."""
    vals = [v.ids for row in run_hpd(model, schema, docs, 1, 8) for v in row]
    counts = Counter(t for ids in vals for t in ids[1:])
    for tok, _ in counts.most_common():
        if 0 < sum(tok in ids for ids in vals) < len(vals):
            return tok
    return counts.most_common(1)[0][0]


_SETUPS: dict = {}


def setup(family, attn, tokenizer):
    """Tiny model, schema with a frequent terminator, 3 documents (cached per family and attention)."""
    if (family, attn) not in _SETUPS:
        model = tiny_model(family, tokenizer, attn)
        schema = layout.schema_prompt(tokenizer, ATTRS)
        docs = [layout.doc_ids(tokenizer, t) for t in TEXTS[:3]]
        _SETUPS[family, attn] = model, with_terminator(schema, frequent_terminator(model, schema, docs)), docs
    return _SETUPS[family, attn]


def mismatches(model, schema, docs, values) -> list[tuple[int, int]]:
    bad = []
    for d, doc in enumerate(docs):
        for n in range(len(schema.attributes)):
            ref, trunc = reference_decode(model, schema, doc, n)
            if (values[d][n].ids, values[d][n].truncated) != (ref, trunc):
                bad.append((d, n))
    return bad


def assert_same(blocks, dense):
    assert [sorted(d) for d in blocks] == [sorted(d) for d in dense]
    for b_doc, d_doc in zip(blocks, dense, strict=True):
        for n, v in b_doc.items():
            w = d_doc[n]
            assert (v.ids, v.truncated, v.steps) == (w.ids, w.truncated, w.steps)
            assert v.logprobs == pytest.approx(w.logprobs, abs=1e-4)
