"""Extractive AR-JSON is as strict as HPD: the format is forced (keys in schema order, the fixed
punctuation between values, '"}', eos), so a row can never stray from it, and every value is a
substring of its document or "n/a", read from its token ids (no JSON made up by the model).

Before, the processor only followed each row against the expected key tokens and left a row that
strayed (a key skipped, reordered or written otherwise) unconstrained for the rest of its output:
the bundled model's AR values were then often not in the product text, or held raw JSON."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from transformers import LogitsProcessorList

from extraction.engine import layout
from extraction.engine.api import Document, Extractor, model_settings
from extraction.engine.decode import ar
from extraction.engine.decode.extractive import DocIndex, doc_index
from tests.support.engine_reference import ForceFormat
from tests.support.engine_schemas import BUNDLED, CATALOG
from tests.support.tiny_models import ATTRS, TEXTS, tiny_model

NA = layout.NA
# product texts with JSON punctuation (quotes, braces, colons, commas), joiners and non-ASCII text
PRODUCTS = [
    *TEXTS,
    'Acme "Pro" HDMI Cable: 6 ft, {4K} 2-pack',
    "Nike Air Max 90 Men's Shoes, White/Black, 10.5 D(M) US",
    "Kellogg's Frosted Flakes Breakfast Cereal, 24 oz",
    "Café Bustelo Espresso Dark Roast Ground Coffee 10 oz",
    "Dove Nutritive Solutions Conditioner 12 fl oz",
    "Sandro Moscoloni Men's Tampa Black Venetian Loafer",
    "Birkenstock Women's Tokyo Super Grip Leather, Black, 5-5.5 Narrow",
    'Samsung 65" Class 4K Crystal UHD Smart TV',
    "Gold Bond Ultimate Healing Lotion 3.5-Ounce",
    "Quaker Oats Old Fashioned, 42 Oz Canister (Pack of 2)",
    "Organic Matcha Green Tea Powder 100g ™ Ceremonial Grade",
    "Lego Classic 11001 Bricks & Ideas, 123 pieces",
]


def problems(outs: list[ar.AROutput], texts: list[str], names: list[str]) -> list[str]:
    """What is wrong with AR outputs: a key that did not come back, a value not in its document."""
    bad = []
    for o, text in zip(outs, texts, strict=True):
        doc = " ".join(text.split())
        for name in names:
            v = o.values[name].text
            if v is None:
                bad.append(f"{name}: no value in {o.text!r}")
            elif v != NA and v not in doc:
                bad.append(f"{name}: {v!r} not in {doc!r}")
    return bad


def json_mismatches(outs: list[ar.AROutput], texts: list[str], names: list[str]) -> list[str]:
    """Outputs that are not exactly '{"Key": " value", ...}' with the returned values (an empty one
    reads "n/a"), keys in schema order (checked where the document has no quote, backslash or
    non-ASCII character, so the output text must be plain JSON)."""
    bad = []
    for o, text in zip(outs, texts, strict=True):
        if '"' in text or "\\" in text or not text.isascii():
            continue
        try:
            obj = json.loads("{" + o.text, strict=False)  # whitespace before a value: any, as in HPD
        except ValueError:
            bad.append(f"not JSON: {o.text!r}")
            continue
        if list(obj) != names or [obj[n].strip() or NA for n in names] != [o.values[n].text for n in names]:
            bad.append(f"{o.text!r} != {[o.values[n].text for n in names]}")
    return bad


@pytest.fixture(scope="module")
def random_setup(tokenizer):
    model = tiny_model("llama", tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in PRODUCTS]
    spans = [doc_index(tokenizer, t) for t in PRODUCTS]
    return model, schema, docs, spans


def free_values(model, schema, docs, spans) -> list[ar.AROutput]:
    """The format forced, values free (the unconstrained control), read like extractive values."""
    prompts = [layout.build_ar_prompt(schema, d) for d in docs]
    ids, mask = ar.left_pad(prompts, 0, "cpu")
    res = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=ar.max_new_tokens(schema, True),
        do_sample=False,
        eos_token_id=schema.ar_eos,
        pad_token_id=0,
        logits_processor=LogitsProcessorList([ForceFormat(schema, ids.shape[1])]),
    )
    outs = []
    for toks, sp in zip(res[:, ids.shape[1] :].tolist(), spans, strict=True):
        vals = ar.extractive_values(schema, sp.table, toks, [0.0] * len(toks), [False] * len(ATTRS))
        outs.append(ar.AROutput("", vals, len(toks)))
    return outs


def test_ar_values_are_substrings_of_their_document_and_every_key_parses(tokenizer, random_setup):
    model, schema, docs, spans = random_setup
    names = [a.name for a in ATTRS]
    outs, _ = ar.generate_json(model, tokenizer, schema, docs, 4, spans=spans)
    assert problems(outs, PRODUCTS, names) == []
    assert json_mismatches(outs, PRODUCTS, names) == []
    assert all(o.text.endswith('"}') for o in outs)  # every output closed its object
    for o in outs:
        for v in o.values.values():
            assert 0.0 < v.confidence <= 1.0 + 1e-6 and v.steps <= o.tokens
    words = [v.text for o in outs for v in o.values.values() if v.text != NA]
    assert len(words) >= len(PRODUCTS)  # the test is about values, not a sea of n/a
    # negative controls: the same checks fail on the random model's free values (format forced)
    # and on its free output (no format at all)
    free = free_values(model, schema, docs, spans)
    assert any("not in" in p for p in problems(free, PRODUCTS, names))
    plain, _ = ar.generate_json(model, tokenizer, schema, docs, 4)
    assert problems(plain, PRODUCTS, names)


def test_a_model_pulled_off_the_format_is_held_to_it(tokenizer, random_setup):
    # the failure of the bundled model: a key skipped, values running into raw JSON. Push the
    # random model hard towards writing a later key and a made-up value at every step.
    model, schema, docs, spans = random_setup
    names = [a.name for a in ATTRS]
    stray = tokenizer.encode('", "Size": " Breakfast Cereal", "', add_special_tokens=False)
    bias = torch.zeros(len(tokenizer))
    bias[stray] = 30.0
    handle = model.lm_head.register_forward_hook(lambda _m, _i, out: out + bias)
    try:
        outs, _ = ar.generate_json(model, tokenizer, schema, docs, 4, spans=spans)
        plain, _ = ar.generate_json(model, tokenizer, schema, docs, 4)
    finally:
        handle.remove()
    assert problems(outs, PRODUCTS, names) == []
    assert json_mismatches(outs, PRODUCTS, names) == []
    assert problems(plain, PRODUCTS, names)  # unconstrained, the pushed model does stray
    assert all(
        " Breakfast Cereal" not in o.text for o, t in zip(outs, PRODUCTS, strict=True) if "Cereal" not in t
    )


def test_without_the_terminator_in_ar_the_next_key_ends_a_value_only_where_it_may(tokenizer, random_setup):
    # a tokenizer without <|eov|>: AR value n ends with the next key's first token ('"'), which
    # documents with a quote also hold; the value still stays a span and the format is forced
    model, schema, docs, spans = random_setup
    names = [a.name for a in ATTRS]
    plain = replace(schema, terminator=tokenizer.eos_token_id, eos=None)
    assert not plain.value_end_in_ar and plain.ar_eos == tokenizer.eos_token_id
    outs, _ = ar.generate_json(model, tokenizer, plain, docs, 4, spans=spans)
    assert problems(outs, PRODUCTS, names) == []
    assert json_mismatches(outs, PRODUCTS, names) == []


def test_values_keep_their_gap_and_the_output_always_closes(tokenizer, random_setup):
    model, schema, docs, spans = random_setup
    short = replace(schema, attributes=[replace(a, max_tokens=2) for a in ATTRS])  # below "n/a"'s 3
    for sch in (schema, short):
        prompts = [layout.build_ar_prompt(sch, d) for d in docs]
        ids, mask = ar.left_pad(prompts, 0, "cpu")
        proc = ar.ExtractiveProcessor(sch, spans, ids.shape[1])
        res = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=ar.max_new_tokens(sch, True),
            do_sample=False,
            eos_token_id=sch.ar_eos,
            pad_token_id=0,
            logits_processor=LogitsProcessorList([proc]),
        )
        truncated = 0
        for b, toks in enumerate(res[:, ids.shape[1] :].tolist()):
            toks = toks[: toks.index(sch.ar_eos) + 1]  # every row reached its eos
            where = ar.value_spans(sch, toks)
            assert all(w is not None for w in where)
            assert toks[where[-1][1] + 1 :] == [*sch.end_ids, sch.ar_eos]
            for n, (first, end) in enumerate(where):
                value = toks[first:end]
                assert value == sch.na_ids or len(value) <= sch.attributes[n].max_tokens
                assert not proc.truncated[b][n] or len(value) == sch.attributes[n].max_tokens
                truncated += proc.truncated[b][n]
        assert truncated > 0  # the random model does run into its gaps


# ---------------------------------------------------------------------------------- the bundled model


@pytest.fixture(scope="module")
def bundled():
    if not (BUNDLED / "config.json").is_file():
        pytest.skip("no bundled model")
    ex = Extractor(BUNDLED)
    if not ex.extractive:
        pytest.skip("the bundled model does not decode extractively")
    return ex


def obeys_rules(ex: Extractor, name: str, value: str, doc: DocIndex) -> bool:
    """value starts where its attribute's start rule lets it and ends where its end rule does."""
    ends = doc.occurrences(value.encode(), ex.start_rule(name))
    return any(doc.word_end(e, ex.end_rule(name)) for e in ends)


def test_bundled_model_ar_values_are_spans_and_obey_the_boundary_rules_as_in_hpd(bundled):
    ex = bundled
    settings = model_settings(BUNDLED)
    budgets, default = settings.get("attribute_budgets", {}), int(settings.get("default_budget", 16))
    checked = {"ar": 0, "hpd": 0}
    for names, texts in CATALOG.values():
        attrs = [layout.AttributeSpec(n, "", int(budgets.get(n, default))) for n in names]
        schema = ex.schema(attrs)
        spans = [doc_index(ex.tokenizer, t) for t in texts]
        docs = [layout.doc_ids(ex.tokenizer, t) for t in texts]
        with torch.inference_mode():
            outs, _ = ar.generate_json(ex.model, ex.tokenizer, schema, docs, 4, spans=spans)
        assert problems(outs, texts, names) == []
        assert json_mismatches(outs, texts, names) == []
        documents = [Document(str(i), t) for i, t in enumerate(texts)]
        hpd, _ = ex.extract(documents, attrs, decoder="hpd")
        for o, h, doc in zip(outs, hpd, spans, strict=True):
            for name in names:
                for dec, v in (("ar", o.values[name]), ("hpd", h[name])):
                    if v.text != NA and not v.truncated and ex.end_rule(name) != layout.FREE:
                        assert obeys_rules(ex, name, v.text, doc), (dec, name, v.text, doc.data)
                        checked[dec] += 1
        # what a user of the API gets: the same values
        api_ar, _ = ex.extract(documents, attrs, decoder="ar")
        for o, r in zip(outs, api_ar, strict=True):
            assert {n: (v.text or NA) for n, v in o.values.items()} == {n: r[n].text for n in names}
    assert checked["ar"] > 0 and checked["hpd"] > 0
