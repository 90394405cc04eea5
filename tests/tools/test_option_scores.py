"""tools/bench/option_scores: every allowed value of an enumeration, laid out as a slot of its own
in one stacked row, is scored as the model scores it alone (prefix + its document + keys 0..n + the
value, one plain causal forward: HPD.md's per-value reference); values made to share one slot see
each other and are not (the negative control); and the greedy walk replayed on those scores is the
HPD decoder's own choice, the exact search of the walk's measure never below it."""

import pytest
import torch

from catalog.kinds import ENUM
from extraction.engine import modeling
from extraction.engine.api import Document, Extractor
from extraction.engine.decode import constraints, masks
from extraction.engine.decode.hpd import prefill_prefix
from extraction.engine.layout import AttributeSpec, doc_ids, schema_prompt
from tests.support.tiny_models import TEXTS, tiny_model, value_alone_layout
from tools.bench.option_scores import chosen, option_paths, score_row

OPTIONS = ("green", "nickel", "organic green tea", "green tea", "Vitamin")
ATTRS = [
    AttributeSpec("Brand", max_tokens=4),
    AttributeSpec("Kind", max_tokens=6, kind=ENUM, allowed_values=OPTIONS, na=False),
]


@pytest.fixture(scope="module")
def tokenizer():
    return modeling.build_tokenizer(TEXTS)


@torch.no_grad()
def alone(model, schema, doc: list[int], n: int, path: list[int], term: int) -> list[float]:
    """The option's token and terminator log-probabilities from one plain causal forward of value n
    alone (prefix + doc + keys 0..n, the option at its slot's positions)."""
    lay = value_alone_layout(schema, doc, n)
    start, key = lay.slot_start[0][n], len(lay.input_ids) - 1
    ids = torch.tensor([lay.input_ids + path])
    pos = torch.tensor([lay.position_ids + [start + i for i in range(len(path))]])
    T = ids.shape[1]
    hidden = modeling.forward_hidden(
        model, ids, pos, masks.causal_mask(1, T, T, model.dtype, ids.device), modeling.new_cache()
    )
    lp = torch.log_softmax(modeling.logits(model, hidden[0, key:]), -1)
    return [float(lp[i, t]) for i, t in enumerate([*path, term])]


def test_each_option_in_the_stacked_row_scores_as_the_model_scores_it_alone(tokenizer):
    model = tiny_model("gemma3_text", tokenizer)
    schema = schema_prompt(tokenizer, ATTRS)
    schema.rules = [None, constraints.choice_rule(tokenizer, OPTIONS, None)]
    paths = option_paths(schema.rules[1])
    assert sorted(paths) == sorted(OPTIONS) and max(len(p) for p in paths.values()) > 1
    docs = [doc_ids(tokenizer, t) for t in TEXTS[:3]]
    prefix = prefill_prefix(model, schema.prefix_ids, "cpu")
    pairs = [(j, 1) for j in range(3)]
    scored = score_row(model, schema, prefix, docs, pairs)
    shared = score_row(model, schema, prefix, docs, pairs, one_slot=True)
    term = schema.terminator
    apart = []
    for j, (scores, seen) in enumerate(zip(scored, shared, strict=True)):
        for value, path in paths.items():
            reference = alone(model, schema, docs[j], 1, path, term)
            assert scores.full[value] == pytest.approx(reference, abs=1e-4), (j, value)
            apart.append(seen.full[value] != pytest.approx(reference, abs=1e-4))
    assert any(apart)  # values sharing a slot see each other's tokens: not what HPD computes


def test_the_walk_replayed_on_the_scores_is_the_decoders_choice(tmp_path, tokenizer):
    tiny_model("llama", tokenizer).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    ex = Extractor(tmp_path, calibrate=False)
    schema = ex.schema(ATTRS)
    rule = schema.rules[1]
    assert isinstance(rule, constraints.ChoiceRule)
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)]
    decoded, _ = ex.extract(docs, ATTRS, decoder="hpd", stack=2, rows=2)
    prefix, _ = ex.prefix_cache(schema)
    pairs = [(j, 1) for j in range(len(TEXTS))]
    ids = [doc_ids(ex.tokenizer, t) for t in TEXTS]
    scored = score_row(ex.model, schema, prefix, ids, pairs, among_allowed=True)
    walks = [chosen(s, option_paths(rule), schema.terminator) for s in scored]
    assert [w["walk"] for w in walks] == [values["Kind"].text for values in decoded]
    for w, s in zip(walks, scored, strict=True):  # the exact search of the walk's measure: never below it
        assert sum(s.allowed[w["path"]]) >= sum(s.allowed[w["walk"]])
