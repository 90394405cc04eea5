"""HPD output equals, token for token, the per-value reference decode (float32, greedy), for twelve
model families with sdpa and eager, under both attention paths (block attention, the default, and
dense rows); stacked equals unstacked; negative controls fail. Block attention's own negative
controls are in test_block_attention.py."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import layout
from extraction.engine.decode import hpd, masks
from tests.support.tiny_models import (
    DEVICE,
    FAMILIES,
    mismatches,
    run_hpd,
    setup,
)


@pytest.mark.parametrize("attention", ["blocks", "dense"])
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("family", FAMILIES)
def test_it_matches_the_per_value_reference(family, attn, attention, tokenizer):
    model, schema, docs = setup(family, attn, tokenizer)
    values = run_hpd(model, schema, docs, stack=2, rows=2, attention=attention)
    assert mismatches(model, schema, docs, values) == []
    flat = [v for row in values for v in row]
    assert any(v.truncated for v in flat) and any(not v.truncated for v in flat)  # both paths ran
    for row in values:
        for v, a in zip(row, schema.attributes, strict=True):
            assert len(v.ids) <= a.max_tokens
            assert v.steps == len(v.ids) + 1  # one forward per value token, one for the terminator check


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_it_gives_the_same_values_stacked_and_unstacked(attn, tokenizer):
    model, schema, docs = setup("llama", attn, tokenizer)
    ids = lambda vals: [[(v.ids, v.truncated) for v in row] for row in vals]  # noqa: E731
    one = ids(run_hpd(model, schema, docs, stack=1, rows=1))
    assert ids(run_hpd(model, schema, docs, stack=3, rows=1)) == one
    assert ids(run_hpd(model, schema, docs, stack=2, rows=2)) == one
    assert ids(run_hpd(model, schema, docs, stack=1, rows=3)) == one


def test_forward_steps_are_the_longest_value_plus_one(tokenizer):
    model, schema, docs = setup("llama", "sdpa", tokenizer)
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    counters = hpd.Counters()
    decoded = hpd.decode(model, schema, pc, hpd.hpd_rows(docs, 3, 3), 1, 0, counters)
    longest = max(len(v.ids) for doc in decoded for v in doc.values())
    assert counters.forward_steps == longest + 1


def test_fork_rows_decode_the_same_values(tokenizer):
    model, schema, docs = setup("qwen3", "sdpa", tokenizer)
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    counters = hpd.Counters()
    forked = hpd.decode(model, schema, pc, hpd.fork_rows(docs, 3), 9, 0, counters)
    assert counters.rows_dropped > 0  # rows whose slot finished left the decode; values unchanged
    values = run_hpd(model, schema, docs, stack=2, rows=2)
    assert [sorted(doc) for doc in forked] == [[0, 1, 2]] * len(docs)  # every value of every document
    for d, doc in enumerate(forked):
        for n, v in doc.items():
            assert v.ids == values[d][n].ids


# ---------------------------------------------------------------------------------- negative controls


def leaky_values_step_mask(base, gen_slot, q_slot, q_valid):
    """Wrong on purpose: every generated entry of the row is visible to every value."""
    rows = torch.gather(base, 1, q_slot[:, :, None].expand(-1, -1, base.shape[-1]))
    gen = torch.zeros((*q_slot.shape, gen_slot.shape[1]), dtype=base.dtype, device=base.device)
    gen.masked_fill_((gen_slot < 0)[:, None, :].expand_as(gen), torch.finfo(base.dtype).min)
    return torch.cat([rows, gen], dim=-1)[:, None]


def leaky_docs_allowed(q_pos, q_doc, q_slot, kv_pos, kv_doc, kv_slot):
    """Wrong on purpose: documents see each other (padding stays hidden)."""
    pos_ok = kv_pos[:, None, :] <= q_pos[:, :, None]
    doc_ok = (kv_doc[:, None, :] != layout.PAD) | (kv_doc[:, None, :] == q_doc[:, :, None])
    slot_ok = (kv_slot[:, None, :] == layout.PROMPT_SLOT) | (kv_slot[:, None, :] == q_slot[:, :, None])
    return pos_ok & doc_ok & slot_ok


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_negative_control_values_that_see_each_other_fail(attn, tokenizer, monkeypatch):
    model, schema, docs = setup("llama", attn, tokenizer)
    monkeypatch.setattr(masks, "step_mask", leaky_values_step_mask)
    values = run_hpd(model, schema, docs, stack=1, rows=3, attention="dense")
    assert mismatches(model, schema, docs, values) != []


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_negative_control_documents_that_see_each_other_fail(attn, tokenizer, monkeypatch):
    model, schema, docs = setup("llama", attn, tokenizer)
    honest = run_hpd(model, schema, docs, stack=3, rows=1, attention="dense")
    monkeypatch.setattr(masks, "allowed", leaky_docs_allowed)
    leaky = run_hpd(model, schema, docs, stack=3, rows=1, attention="dense")
    monkeypatch.undo()
    assert mismatches(model, schema, docs, honest) == []
    assert mismatches(model, schema, docs, leaky) != []
