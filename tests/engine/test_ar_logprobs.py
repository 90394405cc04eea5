"""AR's confidences come from ar.ChosenLogprobs, one number per row and generated position, not from
generate's output_scores / output_logits, which keep a [rows, vocabulary] tensor per step (with
Gemma 3's 262,144 rows, a 64-product batch of AE-110k took 24 GB and was killed). The numbers must
be the ones those tensors give: the log-softmax at the token greedy picked, over the constrained
scores under the extractive constraint, over the logits without it, and at the accepted positions
under prompt lookup."""

from __future__ import annotations

import pytest
import torch
from transformers import LogitsProcessorList

from extraction.engine import layout
from extraction.engine.decode import ar
from extraction.engine.decode.extractive import TokenTable, doc_index
from tests.support.tiny_models import ATTRS, TEXTS, tiny_model


@pytest.fixture(scope="module")
def setup(tokenizer):
    torch.manual_seed(0)
    model = tiny_model("llama", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    spans = [doc_index(tokenizer, t) for t in TEXTS]
    return model, schema, docs, spans


def generate(model, schema, docs, spans, **kw):
    """One batch the way generate_json runs it, with generate's own scores kept beside ChosenLogprobs
    -> (new tokens [B, T], chosen's table, the scores' reference, the raw logits' reference), [B, T] each."""
    ids, mask = ar.left_pad([layout.build_ar_prompt(schema, d) for d in docs], 0, "cpu")
    proc = ar.ExtractiveProcessor(schema, spans, ids.shape[1]) if spans else None
    chosen = ar.ChosenLogprobs(ids.shape[1])
    res = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=ar.max_new_tokens(schema, spans is not None),
        do_sample=False,
        eos_token_id=schema.ar_eos,
        pad_token_id=0,
        logits_processor=LogitsProcessorList([p for p in (proc, chosen) if p is not None]),
        return_dict_in_generate=True,
        output_scores=True,
        output_logits=True,
        **kw,
    )
    new = res.sequences[:, ids.shape[1] :]
    # after its eos a row is padded, not picked: nothing is read there
    ended = (new == schema.ar_eos).long().cumsum(1) - (new == schema.ar_eos).long() > 0

    def at_chosen(steps):  # [B, T]: log-softmax of each step's [B, V] at the token kept there
        lp = torch.stack(steps, 1).float().log_softmax(-1).gather(-1, new[..., None]).squeeze(-1)
        return lp.masked_fill(ended, 0.0)

    # the scores as the processors left them, and the logits before any (what the free path read)
    return new, chosen.table(*new.shape).masked_fill(ended, 0.0), at_chosen(res.scores), at_chosen(res.logits)


@pytest.mark.parametrize("extractive", [True, False], ids=["constrained", "free"])
def test_the_chosen_tokens_log_probabilities_are_those_of_the_full_scores(setup, extractive):
    model, schema, docs, spans = setup
    new, table, reference, raw = generate(model, schema, docs, spans if extractive else None)
    assert table.shape == reference.shape and new.shape[1] > 5
    assert torch.allclose(table, reference, atol=1e-5)
    assert (table < -1e-3).any()  # not all forced: the comparison covers chosen tokens too
    if not extractive:  # no processor before it: the raw logits' numbers, as the free path read before
        assert torch.allclose(table, raw, atol=1e-5)


def test_prompt_lookup_keeps_the_log_probabilities_of_the_tokens_it_accepted(setup):
    model, schema, docs, _ = setup
    doc = [docs[0] + docs[0]]  # a repeated text: lookup proposes candidates from it
    plain_new, _, plain_reference, _ = generate(model, schema, doc, None)
    new, table, _, _ = generate(model, schema, doc, None, prompt_lookup_num_tokens=3)
    assert torch.equal(new, plain_new)  # greedy either way
    assert torch.allclose(table, plain_reference, atol=1e-4)


def test_generate_json_reads_its_confidences_from_them(tokenizer, setup):
    model, schema, docs, spans = setup
    outs, _ = ar.generate_json(model, tokenizer, schema, docs, 4, spans=spans)
    new, _, reference, _ = generate(model, schema, docs, spans)
    pieces = TokenTable.from_tokenizer(tokenizer)
    for b, out in enumerate(outs):
        toks = new[b].tolist()
        toks = toks[: toks.index(schema.ar_eos)] if schema.ar_eos in toks else toks
        expected = ar.extractive_values(
            schema,
            pieces,
            toks,
            reference[b, : len(toks)].tolist(),
            [v.truncated for v in out.values.values()],
        )
        for name, value in out.values.items():
            assert value.text == expected[name].text
            assert value.confidence == pytest.approx(expected[name].confidence, abs=1e-5)
