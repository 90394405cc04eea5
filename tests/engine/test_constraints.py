"""Slot constraints (constraints.py): each kind on a tiny vocabulary and on the real tokenizer;
HPD == fork == the per-value reference == AR under the same constraint where the equivalence holds;
no decoder produces a value its constraint forbids; with the constraint off, one does."""

from __future__ import annotations

import random

import pytest
import torch

from extraction.engine import layout
from extraction.engine.api import AttributeSpec, Extractor
from extraction.engine.decode import ar, constraints, hpd
from extraction.engine.decode.extractive import TokenTable, doc_index
from extraction.engine.decode.token_masks import allowed_mask, masked_choice
from tests.support.engine_reference import allowed_pairs
from tests.support.engine_schemas import COLORS, DOCS, SLEEVES, TYPED
from tests.support.reference_constraints import constrain, masked_log_softmax, start
from tests.support.tiny_models import reference_decode

# a toy vocabulary: ids 0 and 1 are special (no bytes), 2 ends values
PIECES = [None, None, None, b" ", b"5", b"12", b".", b",", b" k", b"kg", b"g", b" oz", b"x", b" n", b"/"]
PIECES += [b"a", b"in", b"ches", b"Kg", b" Red", b" Pat", b" 5"]
TOK = {p.decode(): i for i, p in enumerate(PIECES) if p}
END, NA_IDS = 2, [TOK[" n"], TOK["/"], TOK["a"]]
TABLE = TokenTable(PIECES)


def ids(*pieces: str) -> list[int]:
    return [TOK[p] for p in pieces]


def walk(rule, tokens: list[int]):
    state = start(rule, None, END)
    for t in tokens:
        state.push(t)
    return state


def allowed(rule, tokens: list[int]) -> list[int]:
    return sorted(torch.as_tensor(walk(rule, tokens).allowed()).tolist())


# ---------------------------------------------------------------------------------- tiny vocabulary


def test_choice_allows_exactly_the_paths_of_its_values_and_na():
    rule = constraints.ChoiceRule({"Red": ids(" Red"), "Red Pat": ids(" Red", " Pat"), "n/a": NA_IDS})
    assert allowed(rule, []) == sorted(ids(" Red", " n"))
    assert allowed(rule, ids(" Red")) == sorted(ids(" Pat") + [END])  # "Red" is complete, "Red Pat" goes on
    assert allowed(rule, ids(" Red", " Pat")) == [END]
    assert allowed(rule, ids(" n")) == ids("/") and not walk(rule, ids(" n")).may_end()
    assert walk(rule, ids(" n", "/", "a")).may_end()
    assert rule.longest == 3 and rule.finish(" Red Pat ") == "Red Pat"
    assert rule.accepts("Red") and not rule.accepts("Pat")
    no_na = constraints.ChoiceRule({"Red": ids(" Red")})
    assert allowed(no_na, []) == ids(" Red")  # na=False: "n/a" is not among the paths


def test_number_allows_digits_then_a_known_unit_in_any_case():
    rule = constraints.NumberRule(TABLE, "g", NA_IDS)
    assert allowed(rule, []) == sorted(ids(" ", "5", "12", " n", " 5"))  # no unit, no "." before a digit
    after = allowed(rule, ids(" ", "5"))
    # "/" and " 5" go on to a fraction ("5/12", "5 5/12")
    assert set(ids(" ", "5", "12", ".", ",", "/", " 5", " k", "kg", "g", " oz", "Kg")) | {END} == set(after)
    assert TOK["x"] not in after and TOK[" n"] not in after and TOK[" Red"] not in after
    assert TOK["in"] not in after  # a length: it does not convert to grams
    assert allowed(rule, ids(" ", "5", ".")) == sorted(ids("5", "12", " 5")[:2])  # a digit must follow
    inch = constraints.NumberRule(TABLE, "", NA_IDS)  # no unit: every known unit
    assert END in allowed(inch, ids(" ", "5", "in")) and TOK["ches"] in allowed(inch, ids(" ", "5", "in"))
    assert END not in allowed(rule, ids(" ", "5", " k"))  # "k" is no unit, "kg" is
    assert allowed(rule, ids(" ", "5", "Kg")) == [END]
    assert walk(rule, ids(" n", "/")).finishing() == TOK["a"]
    assert rule.finish("1,5 kg") == "1500 g" and rule.finish("250") == "250 g"
    assert rule.finish("12 kil") == "12 g" and rule.finish("12.") == "12 g"  # cut by the gap
    assert rule.accepts("5 Kg") and rule.accepts("12.5") and not rule.accepts("Red") and rule.accepts("n/a")
    assert not constraints.NumberRule(TABLE, "g").accepts("n/a")


def test_number_reads_fractions_as_us_catalogues_write_inches():
    rule = constraints.NumberRule(TABLE, "in", NA_IDS)
    assert allowed(rule, ids(" ", "5", "/")) == sorted(ids("5", "12"))  # a denominator must follow
    assert END in allowed(rule, ids(" ", "5", " 5", "/", "12", "in"))  # "5 5/12in"
    assert TOK["/"] not in allowed(rule, ids(" ", "5", "/", "12"))  # one fraction bar
    for text, inches in (
        ("47-1/4 in", "47.25 in"),
        ('47 1/4"', "47.25 in"),
        ("3/4", "0.75 in"),
        ("5/12", "0.417 in"),
    ):
        assert rule.accepts(text) and rule.finish(text) == inches, text
    in_cm = constraints.NumberRule(TABLE, "cm", NA_IDS)
    assert in_cm.finish("47-1/4 inches") == "120.015 cm"
    # a range copied from the text reads as its first number, in its own unit
    assert in_cm.finish("10-20 in") == "25.4 cm" and in_cm.finish("10-20") == "10 cm"
    assert in_cm.finish("5 5 in") == "12.7 cm" and in_cm.accepts("10-20 in")


def test_masks_from_tensors_equal_masks_from_lists():
    sets = [[0, 3], torch.tensor([1, 2]), None, torch.tensor([4])]
    as_lists = [a.tolist() if isinstance(a, torch.Tensor) else a for a in sets]
    assert torch.equal(allowed_mask(sets, 5), allowed_mask(as_lists, 5))
    assert allowed_mask(sets, 5).tolist()[1] == [False, True, True, False, False]
    lp = torch.log_softmax(torch.randn(4, 5), -1)
    out = constrain(lp, sets)
    assert torch.equal(out[2], lp[2]) and torch.isinf(out[3, :4]).all() and float(out[3, 4]) == 0.0


def test_the_choice_from_pairs_is_the_greedy_masked_log_softmax():
    gen = torch.Generator().manual_seed(3)
    V = 50
    logits = torch.randn(40, V, generator=gen).round(decimals=1)  # rounded: ties among allowed tokens
    sets = [None if r % 7 == 0 else torch.randperm(V, generator=gen)[: 1 + r % 9].tolist() for r in range(40)]
    tok, lp = masked_choice(logits, *allowed_pairs(sets, V))
    full = masked_log_softmax(logits, allowed_mask(sets, V))
    want_lp, want_tok = full.max(-1)  # the first maximum: the lowest id on a tie
    assert torch.equal(tok, want_tok)
    assert torch.allclose(lp, want_lp, atol=1e-6)
    ties = [r for r, a in enumerate(sets) if a and (logits[r, a] == logits[r, a].max()).sum() > 1]
    assert ties  # the tie-break is exercised
    assert all(a is None or int(t) in a for t, a in zip(tok, sets, strict=True))
    # negative control: a choice that ignored the allowed sets would pick the row's argmax
    assert not torch.equal(tok, logits.argmax(-1))


@pytest.mark.parametrize(
    "family, size",
    [
        ("llama", {}),
        ("granite", {"logits_scaling": 4.0}),
        ("cohere", {"logit_scale": 0.5}),
        ("gemma3_text", {}),
    ],
)
def test_pair_logits_are_the_whole_layers_logits_at_the_pairs(family, size, tokenizer):
    """The output layer computed on the allowed tokens only gives the logits the whole layer gives
    there (scalings included), and so the same choice; an int8 head runs whole and agrees too."""
    from extraction.engine import modeling
    from extraction.engine.decode.token_masks import pair_choice
    from tests.support.tiny_models import tiny_model

    model = tiny_model(family, tokenizer, **size)
    gen = torch.Generator().manual_seed(5)
    V = modeling.vocab_size(model)
    hidden = torch.randn(12, model.config.hidden_size, generator=gen).to(next(model.parameters()).device)
    sets = [None if r == 4 else torch.randperm(V, generator=gen)[: 1 + 3 * r].tolist() for r in range(12)]
    rows, tokens, free = allowed_pairs(sets, V)
    rows, tokens, free = rows.to(hidden.device), tokens.to(hidden.device), free.to(hidden.device)
    whole = modeling.logits(model, hidden)
    torch.testing.assert_close(modeling.pair_logits(model, hidden, rows, tokens), whole[rows, tokens])
    tok, lp = pair_choice(
        modeling.pair_logits(model, hidden, rows, tokens),
        rows,
        tokens,
        free,
        lambda f: modeling.logits(model, hidden[f]),
        V,
    )
    want_tok, want_lp = masked_choice(whole, rows, tokens, free)
    assert torch.equal(tok, want_tok) and torch.allclose(lp, want_lp, atol=1e-5)
    if family == "llama" and hidden.device.type == "cpu":
        modeling.quantize(model, "int8")
        assert not isinstance(model.get_output_embeddings(), torch.nn.Linear)
        torch.testing.assert_close(
            modeling.pair_logits(model, hidden, rows, tokens), modeling.logits(model, hidden)[rows, tokens]
        )


def test_default_rules_are_todays_extractive_spans(tokenizer):
    schema = layout.schema_prompt(tokenizer, [AttributeSpec("Brand"), AttributeSpec("Color")])
    rules = constraints.slot_rules(schema)
    assert all(isinstance(r, constraints.SpanRule) for r in rules) and constraints.needs_document(rules)


# ---------------------------------------------------------------------------------- real tokenizer


def random_paths(rule, steps: int, seed: int = 0) -> list[list[int]]:
    """Random walks through a rule's allowed tokens until it ends: what any model could decode."""
    rng, out = random.Random(seed), []
    for _ in range(steps):
        state, path = start(rule, None, END_REAL), []
        while True:
            options = torch.as_tensor(state.allowed()).tolist()
            tok = rng.choice(options)
            if tok == END_REAL:
                break
            state.push(tok)
            path.append(tok)
        out.append(path)
    return out


END_REAL = -5  # an id outside the vocabulary: the walks never confuse it with a value token


def test_choice_on_the_real_tokenizer_writes_each_value_as_the_tokenizer_does(real_tokenizer):
    tok = real_tokenizer
    na = tok.encode(" n/a", add_special_tokens=False)
    rule = constraints.choice_rule(tok, SLEEVES, na)
    for v in SLEEVES:
        path = tok.encode(" " + v, add_special_tokens=False)
        state = start(rule, None, END_REAL)
        for t in path:
            assert t in torch.as_tensor(state.allowed()).tolist()
            state.push(t)
        assert state.may_end() and END_REAL in state.allowed().tolist()
    decoded = {tok.decode(p).strip() for p in random_paths(rule, 200)}
    assert decoded == set(SLEEVES) | {"n/a"}  # every walk is a value; all of them are reachable
    boolean = constraints.choice_rule(tok, constraints.BOOLEAN_VALUES, None)
    assert {tok.decode(p).strip() for p in random_paths(boolean, 50)} == {"yes", "no"}


def test_number_on_the_real_tokenizer(real_tokenizer):
    tok = real_tokenizer
    table = TokenTable.from_tokenizer(tok)
    rule = constraints.NumberRule(table, "inch", tok.encode(" n/a", add_special_tokens=False))
    for text in (
        "55 inches",
        "1.5 ft",
        "12in",
        "2 cm",
        "3 Inch",
        "n/a",
        "7",
        "47-1/4 in",
        '3/4"',
        "1 1/2 ft",
    ):
        state = start(rule, None, END_REAL)
        for t in tok.encode(" " + text, add_special_tokens=False):
            assert t in state.allowed().tolist(), (text, tok.decode([t]))
            state.push(t)
        assert state.may_end(), text
    first = start(rule, None, END_REAL).allowed().tolist()
    assert tok.encode(" Black", add_special_tokens=False)[0] not in first
    five = start(rule, None, END_REAL)
    for t in tok.encode(" 5", add_special_tokens=False):
        five.push(t)
    assert (
        tok.encode(" kg", add_special_tokens=False)[0] not in five.allowed().tolist()
    )  # a weight, not a length
    for path in random_paths(rule, 100):
        text = tok.decode(path).strip()
        assert rule.accepts(text), text
    assert rule.finish("55 inches") == "55 inch" and rule.finish("1 ft") == "12 inch"


# ---------------------------------------------------------------------------------- decoders


def problems(results, names=None) -> list:
    """Values their attribute's type forbids."""
    out = []
    for r in results:
        for name, v in r.items():
            if names is not None and name not in names:
                continue
            if name == "Color" and v.text not in COLORS + ["n/a"]:
                out.append((name, v.text))
            if name == "Waterproof" and v.text not in ("yes", "no", "n/a"):
                out.append((name, v.text))
            if name == "Weight" and not (v.text == "n/a" or v.text.endswith(" g")):
                out.append((name, v.text))
    return out


def test_the_extractor_carries_the_types_into_the_rules(typed):
    ex, schema = typed
    kinds = [type(r).__name__ if r is not None else None for r in schema.rules]
    assert kinds == ["ChoiceRule", "ChoiceRule", "NumberRule", "SpanRule", None]
    longest = len(ex.tokenizer.encode(" " + COLORS[2], add_special_tokens=False))
    assert schema.attributes[0].max_tokens == longest > 2  # the gap holds the longest value


@pytest.mark.parametrize("decoder", ["hpd", "fork", "ar", "pld"])
def test_no_decoder_produces_a_value_outside_its_type(typed, decoder):
    ex, _ = typed
    results, _ = ex.extract(
        DOCS, TYPED, decoder=decoder, **({"stack": 2, "rows": 2} if decoder == "hpd" else {})
    )
    assert problems(results) == []
    if decoder != "pld":  # pld is unconstrained; its values outside the type read n/a
        typed_values = [r[a].text for r in results for a in ("Color", "Waterproof", "Weight")]
        assert sum(v != "n/a" for v in typed_values) >= 3  # values, not a sea of n/a


def test_negative_control_without_the_constraint_a_forbidden_value_comes_out(model_dir):
    ex = Extractor(model_dir, extractive=True, typed=False)
    results, _ = ex.extract(DOCS, TYPED, decoder="hpd")
    assert problems(results, names={"Color", "Waterproof"}) != []


def test_hpd_fork_and_the_reference_agree_under_the_constraint(typed):
    ex, schema = typed
    docs = [layout.doc_ids(ex.tokenizer, d.text) for d in DOCS]
    spans = [doc_index(ex.tokenizer, d.text) for d in DOCS]
    pc = hpd.prefill_prefix(ex.model, schema.prefix_ids, "cpu")
    N = len(schema.attributes)
    with torch.inference_mode():
        stacked = hpd.decode(
            ex.model, schema, pc, hpd.hpd_rows(docs, N, 2, spans), 2, 0, hpd.Counters(), True
        )
        forked = hpd.decode(ex.model, schema, pc, hpd.fork_rows(docs, N, spans), 8, 0, hpd.Counters(), True)
    for d in range(len(docs)):
        for n in range(N):
            value = stacked[d][n]
            assert forked[d][n].ids == value.ids
            assert constrained_reference(ex.model, schema, docs[d], n, spans[d]) == (
                value.ids,
                value.truncated,
            )


def test_ar_agrees_with_hpd_on_the_first_value_of_each_kind(typed):
    # AR's first value sees exactly HPD slot 0's context (prefix, document, key 0, same positions):
    # under the same constraint both decode the same tokens
    ex, _ = typed
    checked = 0
    for first in range(4):
        order = [TYPED[first]] + [a for k, a in enumerate(TYPED) if k != first]
        schema = ex.schema(order)
        docs = [layout.doc_ids(ex.tokenizer, d.text) for d in DOCS]
        spans = [doc_index(ex.tokenizer, d.text) for d in DOCS]
        pc = hpd.prefill_prefix(ex.model, schema.prefix_ids, "cpu")
        with torch.inference_mode():
            slots = hpd.decode(
                ex.model, schema, pc, hpd.hpd_rows(docs, 5, 1, spans), 8, 0, hpd.Counters(), True
            )
            outs, _ = ar.generate_json(ex.model, ex.tokenizer, schema, docs, 8, spans=spans)
        for d, out in enumerate(outs):
            hv = slots[d][0]
            text = ex.tokenizer.decode(hv.ids, skip_special_tokens=True).strip() or "n/a"
            assert out.values[order[0].name].text == text, (order[0].name, d)
            checked += 1
    assert checked == 4 * len(DOCS)


def constrained_reference(model, schema, doc, n, index) -> tuple[list[int], bool]:
    """reference_decode of value n under the slot's own rule."""
    rule = constraints.slot_rules(schema)[n]
    state = start(rule, index, schema.terminator) if rule is not None else None
    return reference_decode(model, schema, doc, n, state)
