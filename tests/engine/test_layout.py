"""Prompt layout: gaps, restarts, AR target / parsing, and the training row (HPD documents) agreeing
with a teacher-forced per-value reference (so training sees exactly what inference computes)."""

from __future__ import annotations

import torch

from extraction.engine import layout, modeling
from extraction.engine.decode import masks
from extraction.engine.train.corpus import Example
from extraction.engine.train.row_packing import build_row
from tests.support.tiny_models import ATTRS, TEXTS, tiny_model


def test_positions_jump_by_each_gap_and_restart_per_document(tokenizer):
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS[:2]]
    lay = layout.build_hpd_layout(schema, docs)
    P = len(schema.prefix_ids)
    assert lay.position_ids[:P] == list(range(P)) and lay.prefix_len == P
    for j in range(len(docs)):
        first = lay.doc_ids.index(j)
        assert lay.position_ids[first] == P  # every document restarts right after the prefix
        for n, a in enumerate(ATTRS):
            end = lay.key_end[j][n]
            assert lay.slot_start[j][n] == lay.position_ids[end] + 1
            if n + 1 < len(ATTRS):  # the next key starts after the gap
                assert lay.position_ids[end + 1] == lay.slot_start[j][n] + a.max_tokens
    assert set(lay.slot_ids) == {layout.PROMPT_SLOT}
    assert len(lay.input_ids) == P + sum(len(d) + sum(len(k) for k in schema.key_ids) for d in docs)


def test_ar_target_parses_back_to_the_values(tokenizer):
    schema = layout.schema_prompt(tokenizer, ATTRS)
    target = layout.ar_target(tokenizer, schema, {"Brand": "Diesel", "Color": "n/a", "Size": "10-46"}).ids
    assert schema.terminator == tokenizer.convert_tokens_to_ids(layout.VALUE_END) != tokenizer.eos_token_id
    assert target[-1] == tokenizer.eos_token_id  # the object ends with eos ...
    assert target.count(schema.terminator) == 3  # ... and every value with the value terminator
    text = tokenizer.decode(target, skip_special_tokens=True)
    assert layout.parse_ar_json(text, [a.name for a in ATTRS]) == {
        "Brand": "Diesel",
        "Color": "n/a",
        "Size": "10-46",
    }


def test_parse_ar_json_tolerates_broken_output():
    names = ["Brand", "Color", "Size"]
    assert layout.parse_ar_json('"Brand": "Diesel", "Color": "Red', names) == {
        "Brand": "Diesel",
        "Color": "Red",
        "Size": None,
    }
    assert layout.parse_ar_json("garbage", names) == {"Brand": None, "Color": None, "Size": None}
    assert layout.parse_ar_json('{"Brand": "A", "Size": 3}', names) == {
        "Brand": "A",
        "Color": None,
        "Size": "3",
    }


@torch.no_grad()
def test_training_example_matches_a_teacher_forced_reference(tokenizer):
    model = tiny_model("qwen3", tokenizer, "eager")
    schema = layout.schema_prompt(tokenizer, ATTRS)
    values = [["Diesel", "n/a", "High-Top"], ["n/a", "green", "100 count"]]
    names = [a.name for a in ATTRS]
    gold = [
        Example(text, "Shoes", dict(zip(names, row, strict=True)))
        for text, row in zip(TEXTS[:2], values, strict=True)
    ]
    ex = build_row(tokenizer, ATTRS, gold, [])  # the training row: HPD documents, values teacher-forced
    t = lambda x: torch.tensor([x])  # noqa: E731
    mask = masks.hpd_mask(t(ex.position_ids), t(ex.doc_ids), t(ex.slot_ids), torch.float32)
    lp = modeling.logprobs(
        model, modeling.forward_hidden(model, t(ex.input_ids), t(ex.position_ids), mask, modeling.new_cache())
    )[0]
    lay = layout.build_hpd_layout(schema, [layout.doc_ids(tokenizer, d) for d in TEXTS[:2]])
    appended = len(lay.input_ids)
    for j, doc in enumerate(TEXTS[:2]):
        for n in range(len(ATTRS)):
            target = layout.value_ids(tokenizer, values[j][n], schema.terminator, ATTRS[n].max_tokens)
            sub = layout.SchemaPrompt(
                ATTRS[: n + 1], schema.prefix_ids, schema.key_ids[: n + 1], schema.end_ids, schema.terminator
            )
            ref = layout.build_hpd_layout(sub, [layout.doc_ids(tokenizer, doc)])
            ids = ref.input_ids + target[:-1]
            pos = ref.position_ids + [ref.slot_start[0][n] + k for k in range(len(target) - 1)]
            T = len(ids)
            ref_lp = modeling.logprobs(
                model,
                modeling.forward_hidden(
                    model,
                    t(ids),
                    t(pos),
                    masks.causal_mask(1, T, T, torch.float32, "cpu"),
                    modeling.new_cache(),
                ),
            )[0]
            rows = [lay.key_end[j][n]] + list(range(appended, appended + len(target) - 1))
            assert [ex.labels[r] for r in rows] == target
            torch.testing.assert_close(lp[rows], ref_lp[len(ref.input_ids) - 1 :], atol=1e-4, rtol=1e-4)
            appended += len(target) - 1
    assert sum(lbl != -100 for lbl in ex.labels) == appended - len(lay.input_ids) + 6
