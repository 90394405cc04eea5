"""batched_constraints.BatchedConstraint equals the per-slot states (constraints.py, extractive.py,
tests/support/reference_constraints.py)
step for step: on random walks through every kind (spans on real product titles with the real
tokenizer and on the tiny one, choices, numbers, free slots, all in one batch) the masks, may_end
and finishing agree at every step, and a forbidden token is False (negative control). HPD, fork and
AR-JSON decode exactly as with the per-slot hooks (tests/support/reference_hooks.py)."""

from __future__ import annotations

import pathlib
import random

import pytest
import torch

from extraction.engine import data, layout
from extraction.engine.decode import ar, constraints, hpd
from extraction.engine.decode.batched_constraints import BatchedConstraint
from extraction.engine.decode.extractive import COMPOUND, FREE, WORD, TokenTable, doc_index
from extraction.engine.decode.token_masks import allowed_mask
from tests.support.engine_schemas import COLORS, DOCS, SLEEVES, TYPED
from tests.support.reference_constraints import start
from tests.support.reference_hooks import ReferenceConstrained, ReferenceProcessor
from tests.support.tiny_models import TEXTS

REPO = pathlib.Path(__file__).resolve().parents[2]
DEV = REPO.parent / "shared" / "data" / "ave" / "oa-mine" / "dev.jsonl"
RULES = [(FREE, WORD), (WORD, WORD), (COMPOUND, COMPOUND), (WORD, COMPOUND), (FREE, COMPOUND)]


def titles(k: int) -> list[str]:
    """The first k product titles of OA-Mine dev (the tiny texts where the data is absent)."""
    if not DEV.is_file():
        return list(TEXTS)
    return [p.text for p in data.load_jsonl(DEV, limit=k)]


def allowed_of(state) -> list[int] | None:
    a = state.allowed()
    return a.tolist() if isinstance(a, torch.Tensor) else a


def ar_allowed(state, allowed: list[int] | None) -> list[int] | None:
    """What the per-row AR processor allowed when the end token is also a text token (no
    terminator in AR): the end token only where the value may end."""
    if allowed is None or state.end not in allowed or state.may_end():
        return allowed
    return [t for t in allowed if t != state.end] or [state.end]


def walk_and_compare(specs, vocab: int, seed: int, steps: int = 14, wild: float = 0.1) -> int:
    """Walk every slot along random tokens (mostly allowed ones; a share `wild` of any token) through
    the reference states and one BatchedConstraint; compare at every step. -> masks compared."""
    rng = random.Random(seed)
    states = [start(r, i, e) for r, i, e in specs]
    batched = BatchedConstraint(specs)
    alive, compared = list(range(len(specs))), 0
    for _ in range(steps):
        if not alive:
            break
        idx = torch.tensor(alive)
        mask, free = batched.mask(idx, vocab)
        allowed = [allowed_of(states[i]) for i in alive]
        assert torch.equal(mask, allowed_mask(allowed, vocab)), "masks differ"
        assert free.tolist() == [a is None for a in allowed]
        strict, _ = batched.mask(idx, vocab, strict_end=True)
        assert torch.equal(
            strict,
            allowed_mask([ar_allowed(states[i], a) for i, a in zip(alive, allowed, strict=True)], vocab),
        )
        assert batched.may_end(idx).tolist() == [states[i].may_end() for i in alive]
        assert batched.finishing(idx).tolist() == [
            -1 if states[i].finishing() is None else states[i].finishing() for i in alive
        ]
        compared += len(alive)
        picks = []
        for k in range(len(alive)):
            options = allowed[k] if allowed[k] is not None else list(range(vocab))
            forbidden = sorted(set(range(0, vocab, 97)) - set(options))
            if forbidden:
                assert not bool(mask[k, rng.choice(forbidden)])  # negative control
            tok = rng.randrange(vocab) if rng.random() < wild else rng.choice(options)
            picks.append(tok)
        batched.push(idx, torch.tensor(picks))
        for i, tok in zip(alive, picks, strict=True):
            if tok != states[i].end:
                states[i].push(tok)
        assert batched.length[idx].tolist() == [states[i].length for i in alive]
        alive = [i for i, tok in zip(alive, picks, strict=True) if tok != states[i].end]
    return compared


def span_specs(tokenizer, texts, end):
    na = tokenizer.encode(" n/a", add_special_tokens=False)
    out = []
    for k, text in enumerate(texts):
        index = doc_index(tokenizer, text)
        end_rule, start_rule = RULES[k % len(RULES)]
        out.append((constraints.SpanRule(na, end_rule, start_rule), index, end))
    return out


def test_spans_on_real_titles_with_the_real_tokenizer(real_tokenizer):
    tok = real_tokenizer
    end = tok.eos_token_id
    specs = span_specs(tok, titles(40), end)
    compared = sum(walk_and_compare(specs, len(tok), seed) for seed in range(3))
    assert compared > 300


def test_spans_on_the_tiny_tokenizer(tokenizer):
    specs = span_specs(tokenizer, TEXTS * 3, tokenizer.eos_token_id)
    for seed in range(5):
        walk_and_compare(specs, len(tokenizer), seed, steps=10, wild=0.3)


def test_spans_whose_end_token_is_also_a_text_token(tokenizer):
    # AR without the terminator: a value ends with the next key's first token, which documents may hold
    specs = span_specs(tokenizer, TEXTS * 3, tokenizer.convert_tokens_to_ids("e"))
    assert specs[0][2] >= 0
    for seed in range(5):
        walk_and_compare(specs, len(tokenizer), seed, steps=10, wild=0.1)


def test_choices_numbers_spans_and_free_slots_in_one_batch(real_tokenizer):  # noqa: F811
    tok = real_tokenizer
    end = tok.eos_token_id
    na = tok.encode(" n/a", add_special_tokens=False)
    table = TokenTable.from_tokenizer(tok)
    rules = [
        constraints.choice_rule(tok, SLEEVES, na),
        constraints.choice_rule(tok, COLORS, None),
        constraints.choice_rule(tok, constraints.BOOLEAN_VALUES, na),
        constraints.NumberRule(table, "inch", na),
        constraints.NumberRule(table, "g", na),
        None,
    ]
    specs = [(r, None, end) for r in rules for _ in range(4)] + span_specs(tok, titles(6), end)
    for seed in range(6):
        walk_and_compare(specs, len(tok), seed, steps=12, wild=0.15)


def test_a_batch_keeps_its_slots_apart_whatever_order_they_are_asked_in(real_tokenizer):  # noqa: F811
    tok = real_tokenizer
    specs = span_specs(tok, titles(8), tok.eos_token_id)
    batched = BatchedConstraint(specs)
    word = tok.encode(" " + titles(8)[3].split()[0], add_special_tokens=False)[0]
    batched.push(torch.tensor([3]), torch.tensor([word]))
    mask, _ = batched.mask(torch.tensor([7, 3, 0]), len(tok))
    state = specs[3][0].start(specs[3][1], tok.eos_token_id)
    state.push(word)
    assert torch.equal(mask[1], allowed_mask([state.allowed()], len(tok))[0])
    fresh = [allowed_of(specs[i][0].start(specs[i][1], tok.eos_token_id)) for i in (7, 0)]
    assert torch.equal(mask[[0, 2]], allowed_mask(fresh, len(tok)))


# ---------------------------------------------------------------------------------- decoders


def test_hpd_and_fork_decode_exactly_as_with_the_per_slot_states(typed, monkeypatch):  # noqa: F811
    ex, schema = typed
    docs = [layout.doc_ids(ex.tokenizer, d.text) for d in DOCS]
    spans = [doc_index(ex.tokenizer, d.text) for d in DOCS]
    pc = hpd.prefill_prefix(ex.model, schema.prefix_ids, "cpu")
    N = len(schema.attributes)

    def run():
        with torch.inference_mode():
            stacked = hpd.decode(
                ex.model, schema, pc, hpd.hpd_rows(docs, N, 2, spans), 2, 0, hpd.Counters(), True
            )
            # one row per (document, attribute), 8 rows a batch: rows finish and drop_finished drops them
            counters = hpd.Counters()
            forked = hpd.decode(ex.model, schema, pc, hpd.fork_rows(docs, N, spans), 8, 0, counters, True)
        return stacked, forked, counters.rows_dropped

    batched = run()
    monkeypatch.setattr(hpd, "Constrained", ReferenceConstrained)
    reference = run()
    for ours, ref in zip(batched[:2], reference[:2], strict=True):  # stacked, then forked
        assert [{n: (v.ids, v.steps, v.truncated) for n, v in doc.items()} for doc in ours] == [
            {n: (v.ids, v.steps, v.truncated) for n, v in doc.items()} for doc in ref
        ]
        # the reference takes its logits from the whole output layer, the engine from the allowed
        # tokens' rows only (modeling.pair_logits): the same sums in another order
        assert [v.logprobs for doc in ours for v in doc.values()] == [
            pytest.approx(v.logprobs, abs=1e-5) for doc in ref for v in doc.values()
        ]
    assert reference[2] > 0  # the rows dropped mid-decode are covered


@pytest.mark.parametrize("terminator", [True, False])
def test_ar_decodes_exactly_as_with_the_per_row_states(typed, monkeypatch, terminator):  # noqa: F811
    # without the terminator in AR, a value ends with the next key's first token, also a text token
    ex, schema = typed
    if not terminator:
        from dataclasses import replace

        schema = replace(schema, terminator=ex.tokenizer.eos_token_id, eos=None)
        assert not schema.value_end_in_ar
    texts = [d.text for d in DOCS] + ['Acme "Pro" HDMI Cable: 6 ft, {4K} 2-pack, 250 g']
    docs = [layout.doc_ids(ex.tokenizer, t) for t in texts]
    spans = [doc_index(ex.tokenizer, t) for t in texts]

    def run():
        with torch.inference_mode():
            return ar.generate_json(ex.model, ex.tokenizer, schema, docs, 3, spans=spans)

    batched = run()
    monkeypatch.setattr(ar, "ExtractiveProcessor", ReferenceProcessor)
    reference = run()
    assert batched == reference
    assert any(v.truncated for out in batched[0] for v in out.values.values()) or terminator


def test_every_typed_attribute_is_decoded_through_the_batched_hook(typed):  # noqa: F811
    ex, schema = typed
    spans = [doc_index(ex.tokenizer, d.text) for d in DOCS]
    rows = hpd.build_rows(schema, hpd.hpd_rows([[5]] * len(DOCS), len(TYPED), 1, spans), 0, "cpu")
    hook = hpd.Constrained(rows, schema)
    kinds = hook.slots.kind.tolist()
    assert {0, 1, 2} <= set(kinds)  # span, automaton and free slots side by side
