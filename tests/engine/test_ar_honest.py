"""AR-JSON at its honest best (decode/ar_honest.py) changes the cost of AR-JSON, never its values: on
real products with the small trained model, on the typed schema (enumeration, boolean, number, span,
free) and on tiny models of several families, free and constrained, it writes what ar.generate_json
writes, token for token, with the same confidences and forward count; yet a constrained decode
never runs the whole output layer. Negative controls: the same comparison catches an output layer
computed on the wrong rows and a decode under another constraint."""

from __future__ import annotations

import pathlib

import pytest
import torch

from extraction.engine import data, layout
from extraction.engine.api import Document, Extractor
from extraction.engine.budgets import model_budgets
from extraction.engine.decode import ar, ar_honest, hpd
from extraction.engine.decode.extractive import doc_index
from extraction.normalize import BOOLEAN_VALUES
from tests.support.engine_schemas import BUNDLED, CATALOG, COLORS, DOCS, TYPED
from tests.support.tiny_models import ATTRS, DEVICE, TEXTS, tiny_model

DEV = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ave" / "oa-mine" / "dev.jsonl"
PRODUCTS = 16  # OA-Mine dev products decoded on the bundled model (a few categories)


def differences(a: list[dict], b: list[dict]) -> list[str]:
    """Where two decoders' results (per product: attribute -> ValueResult) differ: text, truncation,
    steps, or a confidence beyond float32 rounding."""
    out = []
    for i, (ra, rb) in enumerate(zip(a, b, strict=True)):
        for name, va in ra.items():
            vb = rb[name]
            if (va.text, va.truncated, va.steps) != (vb.text, vb.truncated, vb.steps):
                out.append(f"product {i} {name}: {va.text!r} != {vb.text!r}")
            elif va.confidence != pytest.approx(vb.confidence, abs=1e-5):
                out.append(f"product {i} {name}: confidence {va.confidence} != {vb.confidence}")
    return out


def real_products() -> dict[str, tuple[list[Document], list[layout.AttributeSpec]]]:
    """category -> (its OA-Mine dev products, its schema with the bundled model's budgets); the
    CATALOG titles where the shared data is absent."""
    budgets, default = model_budgets(BUNDLED)
    spec = lambda names: [layout.AttributeSpec(n, "", budgets.get(n, default)) for n in names]  # noqa: E731
    if not DEV.is_file():
        return {
            c: ([Document(str(i), t) for i, t in enumerate(ts)], spec(n)) for c, (n, ts) in CATALOG.items()
        }
    products = data.load_jsonl(DEV, limit=PRODUCTS)
    schemas = data.schemas(products)
    return {
        cat: ([Document(products[i].key, products[i].text) for i in idx], spec(schemas[cat]))
        for cat, idx in data.by_category(products).items()
    }


@pytest.fixture(scope="module")
def bundled():
    if not (BUNDLED / "config.json").is_file():
        pytest.skip("no bundled model")
    ex = Extractor(BUNDLED, dtype="float32", calibrate=False)
    if not ex.extractive:
        pytest.skip("the bundled model does not decode extractively")
    return ex


def decode_both(ex: Extractor, docs, attrs, batch: int = 4):
    """ar then ar-honest on the same products, each paying its own prefix prefill."""
    ex.clear_prefix_cache()
    ar_out, ar_stats = ex.extract(docs, attrs, decoder="ar", batch=batch)
    ex.clear_prefix_cache()
    honest, honest_stats = ex.extract(docs, attrs, decoder="ar-honest", batch=batch)
    return ar_out, honest, ar_stats, honest_stats


class HeadCalls:
    """Calls of the whole output layer (modeling.logits); pair_logits reads its weight rows without
    calling it."""

    def __init__(self, model):
        self.count = 0
        self._handle = model.get_output_embeddings().register_forward_hook(self._hook)

    def _hook(self, *_):
        self.count += 1

    def close(self):
        self._handle.remove()


def test_honest_ar_writes_what_ar_writes_on_real_products(bundled):
    checked, valued = 0, 0
    for docs, attrs in real_products().values():
        ar_out, honest, ar_stats, honest_stats = decode_both(bundled, docs, attrs)
        assert differences(ar_out, honest) == []
        # the same tokens, so the same number of forwards (one per generated token, and the prefix)
        assert (honest_stats.forward_steps, honest_stats.tokens_decoded) == (
            ar_stats.forward_steps,
            ar_stats.tokens_decoded,
        )
        checked += sum(len(r) for r in honest)
        valued += sum(v.text != layout.NA for r in honest for v in r.values())
    assert checked >= 50 and valued >= 10  # values, not a sea of n/a


def test_honest_ar_never_runs_the_whole_head_where_every_value_is_constrained(bundled):
    docs, attrs = next(iter(real_products().values()))
    calls = HeadCalls(bundled.model)
    try:
        bundled.extract(docs, attrs, decoder="ar-honest", batch=4)  # prefills the prefix (no head)
        honest_calls = calls.count
        _, stats = bundled.extract(docs, attrs, decoder="ar", batch=4)  # the prefix cached
    finally:
        calls.close()
    assert honest_calls == 0
    assert calls.count == stats.forward_steps > 0  # generate: the whole head at every step


def test_honest_ar_writes_what_ar_writes_on_every_kind_of_slot(typed):
    ex, _ = typed
    ar_out, honest, _, _ = decode_both(ex, DOCS, TYPED)
    assert differences(ar_out, honest) == []
    # every kind of slot was decoded under its rule: the enumeration, the boolean, the number
    assert {r["Color"].text for r in honest} <= {*COLORS, layout.NA}
    assert {r["Waterproof"].text for r in honest} <= {*BOOLEAN_VALUES, layout.NA}
    assert all(r["Weight"].text == layout.NA or r["Weight"].text[0].isdigit() for r in honest)


@pytest.mark.parametrize(
    ("family", "constrained", "static"),
    [
        ("llama", False, False),
        ("llama", True, False),
        ("gemma3_text", True, False),  # Gemma 3's family: sliding and full layers
        ("gpt_neox", True, False),
        ("llama", True, True),  # transformers' StaticCache
        ("gemma3_text", True, True),
    ],
)
def test_honest_ar_writes_what_ar_writes_on_tiny_models(tokenizer, family, constrained, static):
    # random models run into their gaps and never stop when free: truncation, forced "n/a"
    # finishes, the budget's end and rows finishing at different steps are all exercised
    model = tiny_model(family, tokenizer)
    schema = layout.schema_prompt(tokenizer, ATTRS)
    docs = [layout.doc_ids(tokenizer, t) for t in TEXTS]
    spans = [doc_index(tokenizer, t) for t in TEXTS] if constrained else None
    prefix = hpd.prefill_prefix(model, schema.prefix_ids, DEVICE)
    with torch.inference_mode():
        want, want_forwards = ar.generate_json(
            model, tokenizer, schema, docs, 3, spans=spans, prefix_cache=prefix
        )
        got, forwards = ar_honest.generate_json(
            model, tokenizer, schema, docs, 3, spans=spans, prefix_cache=prefix, static=static
        )
    assert [o.text for o in got] == [o.text for o in want]
    assert [o.tokens for o in got] == [o.tokens for o in want]
    assert forwards == want_forwards
    for a, b in zip(got, want, strict=True):
        assert [(v.text, v.truncated, v.steps) for v in a.values.values()] == [
            (v.text, v.truncated, v.steps) for v in b.values.values()
        ]
        for va, vb in zip(a.values.values(), b.values.values(), strict=True):
            assert va.confidence == pytest.approx(vb.confidence, abs=1e-5)
    if constrained:
        assert len({o.tokens for o in got}) > 1  # rows finished at different steps


def test_negative_control_a_head_on_the_wrong_rows_is_caught(bundled, monkeypatch):
    docs, attrs = next(iter(real_products().values()))
    docs = docs[:4]  # a wrong head writes values to their gaps: a few products show it
    right, _ = bundled.extract(docs, attrs, decoder="ar-honest", batch=4)
    shifted = ar_honest.pair_logits
    vocab = bundled.model.get_output_embeddings().out_features
    # each allowed token scored with the next token's row of the output layer
    monkeypatch.setattr(
        ar_honest, "pair_logits", lambda model, h, rows, toks: shifted(model, h, rows, (toks + 1) % vocab)
    )
    wrong, _ = bundled.extract(docs, attrs, decoder="ar-honest", batch=4)
    assert differences(right, wrong)


def test_negative_control_another_constraint_is_caught(typed, model_dir):
    ex, _ = typed
    untyped = Extractor(model_dir, extractive=True, typed=False, calibrate=False)
    ar_out, _ = ex.extract(DOCS, TYPED, decoder="ar", batch=4)
    other, _ = untyped.extract(DOCS, TYPED, decoder="ar-honest", batch=4)
    assert differences(ar_out, other)
