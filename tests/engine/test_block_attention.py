"""Block attention (block_attention.py) against dense rows (dense_attention.py) and the per-value
reference: the same tokens, log-probabilities equal to float32 rounding, with rows leaving the
decode, stacked and forked rows, and a model whose layers do not call the attention interface;
negative controls: documents or values that see each other under the blocks give other values."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import layout
from extraction.engine.decode import block_attention, hpd
from tests.support.tiny_models import (
    ATTRS,
    DEVICE,
    FAMILIES,
    TEXTS,
    assert_same,
    mismatches,
    run_hpd,
    setup,
    tiny_model,
)


def decode_both(model, schema, docs, rows_of, batch_rows, lookahead=hpd.LOOKAHEAD):
    """(blocks, dense, block counters) decoding the same rows (blocks with lookahead's drafts)."""
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    out, counters = [], None
    for attention in ("blocks", "dense"):
        c = hpd.Counters()
        out.append(
            hpd.decode(
                model, schema, pc, rows_of(docs), batch_rows, 0, c, attention=attention, lookahead=lookahead
            )
        )
        counters = counters or c
    return out[0], out[1], counters


@pytest.mark.parametrize("family", ["llama", "qwen3", "gpt_neox", "gemma"])
@pytest.mark.parametrize("stack", [1, 3, 5])
def test_blocks_equal_dense_rows(family, stack, tokenizer):
    model, schema, _ = setup(family, "sdpa", tokenizer)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS * 3]  # 12 documents of unequal lengths
    blocks, dense, _ = decode_both(
        model, schema, docs, lambda d: hpd.hpd_rows(d, len(schema.attributes), stack), 6
    )
    assert_same(blocks, dense)


def test_the_model_sees_no_padding_under_blocks(tokenizer):
    """Rows of unequal length and slots that finish at different steps: every forward under blocks
    feeds the model exactly the real prompt tokens (prefill) or the open slots' tokens (a step),
    packed into one sequence, and still decodes what dense rows (padded) decode. (Without lookahead:
    a step then feeds exactly one token per open slot.)"""
    model, schema, _ = setup("llama", "sdpa", tokenizer)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS * 2]
    rows_of = lambda d: hpd.hpd_rows(d, len(schema.attributes), 3)  # noqa: E731
    fed = []
    hook = model.get_input_embeddings().register_forward_hook(
        lambda m, args, out: fed.append(tuple(args[0].shape))
    )
    try:
        blocks, dense, counters = decode_both(model, schema, docs, rows_of, 6, lookahead=None)
    finally:
        hook.remove()
    assert_same(blocks, dense)
    under_blocks = fed[1 : counters.forward_steps + 1]  # fed[0]: the prefix prefill
    rows = hpd.build_rows(schema, rows_of(docs), 0, torch.device(DEVICE))
    real = int((rows.doc_ids != layout.PAD).sum())
    assert real < rows.input_ids.numel()  # the rows are padded ...
    assert under_blocks[0] == (1, real)  # ... and the model sees none of it
    open_per_step = [n for _, n in under_blocks[1:]]
    assert all(b == 1 for b, _ in under_blocks)
    assert sum(open_per_step) == counters.tokens_decoded - int(rows.slot_valid.sum())
    assert open_per_step == sorted(open_per_step, reverse=True) and open_per_step[0] > open_per_step[-1]


def test_blocks_equal_dense_rows_when_stacked_rows_leave(tokenizer):
    """Rows of two documents leave the decode once finished (the kept rows' groups renumbered):
    half the rows decode only Color (a 3-token gap), the others Brand and Size (5 and 6)."""
    model, schema, _ = setup("llama", "sdpa", tokenizer)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS * 4]

    def rows_of(d):
        out = []
        for r in range(0, len(d), 2):
            slots = [1] if (r // 2) % 2 == 0 else [0, 2]
            out.append([hpd.RowDoc(d[i], 3, slots, None, i) for i in (r, r + 1)])
        return out

    blocks, dense, counters = decode_both(model, schema, docs, rows_of, 8)
    assert counters.rows_dropped > 0
    assert_same(blocks, dense)


def test_fork_rows_under_blocks_equal_dense(tokenizer):
    model, schema, _ = setup("qwen2", "sdpa", tokenizer)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    blocks, dense, counters = decode_both(model, schema, docs, lambda d: hpd.fork_rows(d, len(ATTRS)), 5)
    assert_same(blocks, dense)
    assert counters.rows_dropped > 0


def test_a_model_outside_the_attention_interface_is_served_by_dense_rows(tokenizer):
    """stablelm's layers compute attention themselves: the call count catches it, dense rows
    serve it, and its values still equal the reference."""
    model = tiny_model("stablelm", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS[:3]]
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    rows = hpd.build_rows(schema, hpd.hpd_rows(docs, len(ATTRS), 2), 0, torch.device(DEVICE))
    plan = block_attention.BlockRows(pc, rows, int(rows.slot_gap.max()))
    with pytest.raises(block_attention.NotDispatched):
        plan.prefill(model, rows)
    d = hpd.prefill_rows(model, schema, pc, rows, hpd.Greedy(), hpd.Counters())
    assert isinstance(d.attn, hpd.DenseRows)
    assert mismatches(model, schema, docs, run_hpd(model, schema, docs, 2, 2)) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_but_stablelm_decodes_under_blocks(family, tokenizer):
    model, schema, docs = setup(family, "sdpa", tokenizer)
    pc = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    rows = hpd.build_rows(schema, hpd.hpd_rows(docs, len(ATTRS), 2), 0, torch.device(DEVICE))
    d = hpd.prefill_rows(model, schema, pc, rows, hpd.Greedy(), hpd.Counters())
    assert isinstance(d.attn, hpd.DenseRows if family == "stablelm" else block_attention.BlockRows)


# ---------------------------------------------------------------------------------- negative controls


def test_negative_control_documents_grouped_together_fail(tokenizer, monkeypatch):
    """Wrong on purpose: every document of a row in one group, so documents see each other."""
    model, schema, docs = setup("llama", "sdpa", tokenizer)
    honest = run_hpd(model, schema, docs, stack=3, rows=1)
    real_init = block_attention.BlockPlan.__init__

    def one_group(self, prefix_cache, doc_ids, position_ids, slot_doc, slot_pos, max_gap):
        together = torch.where(doc_ids == layout.PAD, doc_ids, 0)
        real_init(
            self,
            prefix_cache,
            together,
            position_ids,
            torch.where(slot_doc == layout.PAD, slot_doc, 0),
            slot_pos,
            max_gap,
        )

    monkeypatch.setattr(block_attention.BlockPlan, "__init__", one_group)
    leaky = run_hpd(model, schema, docs, stack=3, rows=1)
    monkeypatch.undo()
    assert mismatches(model, schema, docs, honest) == []
    assert mismatches(model, schema, docs, leaky) != []


def test_negative_control_values_that_see_each_other_fail(tokenizer, monkeypatch):
    """Wrong on purpose: a value sees every value column of its document, not only its own."""
    model, schema, docs = setup("llama", "sdpa", tokenizer)
    real_begin = block_attention.BlockPlan.begin_step

    def leaky_begin(self, order, valid, fed, position):
        real_begin(self, order, valid, fed, position)
        self.step["sees"][:, self.P + self.Ld :] = True

    monkeypatch.setattr(block_attention.BlockPlan, "begin_step", leaky_begin)
    values = run_hpd(model, schema, docs, stack=1, rows=3)
    assert mismatches(model, schema, docs, values) != []
