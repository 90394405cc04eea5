"""The Extractor contract and the evaluate CLI on a tiny model saved to a directory."""

from __future__ import annotations

import json
import re

import pytest
import torch

from extraction.engine import api, modeling
from extraction.engine.api import (
    AttributeSpec,
    BatchStats,
    Document,
    Extractor,
    ValueResult,
    default_model_dir,
)
from extraction.engine.cli import main
from tests.support.tiny_models import TEXTS

DOCS = [
    Document("sku-long", TEXTS[1] + " extra words for length"),
    Document("sku-a", TEXTS[0]),
    Document("sku-b", TEXTS[2]),
    Document("sku-c", TEXTS[3]),
]
SPECS = [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Color", "main colour", 3)]


@pytest.fixture(scope="module")
def extractor(model_dir):
    return Extractor(model_dir)


def texts(results):
    return [{k: v.text for k, v in r.items()} for r in results]


def test_it_loads_a_model_dir_with_name_and_revision(extractor, model_dir):
    assert extractor.model_name == model_dir.name
    assert re.fullmatch(r"[0-9a-f]{12}", extractor.model_revision)
    assert extractor.random_standin is False


def test_it_extracts_every_attribute_of_every_document_in_order(extractor):
    results, stats = extractor.extract(DOCS, SPECS)
    assert len(results) == len(DOCS) and isinstance(stats, BatchStats)
    for r in results:
        assert set(r) == {"Brand", "Color"}
        for v in r.values():
            assert isinstance(v, ValueResult) and 0.0 <= v.confidence <= 1.0 and v.text
            assert 1 <= v.steps <= 5
    assert stats.forward_steps >= 2 and stats.tokens_decoded > 0 and stats.seconds > 0
    # result i belongs to docs[i]: the same document alone gives the same values
    alone, _ = extractor.extract([DOCS[2]], SPECS, stack=1)
    assert texts(alone)[0] == texts(results)[2]


def test_forced_layouts_and_fork_agree(extractor):
    base = texts(extractor.extract(DOCS, SPECS, stack=1, rows=1)[0])
    assert texts(extractor.extract(DOCS, SPECS, stack=4, rows=1)[0]) == base
    assert texts(extractor.extract(DOCS, SPECS, stack=2, rows=2)[0]) == base
    assert texts(extractor.extract(DOCS, SPECS, decoder="fork", batch=3)[0]) == base


def test_ar_and_prompt_lookup_return_a_value_per_attribute(extractor):
    for decoder in ("ar", "pld"):
        results, stats = extractor.extract(DOCS[:2], SPECS, decoder=decoder, batch=2)
        assert [set(r) for r in results] == [{"Brand", "Color"}] * 2
        assert stats.forward_steps > 0


def test_unknown_decoder_and_missing_dir_are_clear_errors(extractor, tmp_path):
    with pytest.raises(ValueError, match="decoder"):
        extractor.extract(DOCS, SPECS, decoder="beam")
    with pytest.raises(FileNotFoundError):
        Extractor(tmp_path / "nothing")


def test_default_model_dir_is_the_made_model_whatever_the_environment(monkeypatch, tmp_path):
    # the engine never reads the environment: SLOTWISE_MODEL_DIR is the web side's setting, which
    # hands the workers' Extractor its directory (tests/test_architecture.py checks the setting)
    monkeypatch.setenv("SLOTWISE_MODEL_DIR", str(tmp_path))
    assert default_model_dir() != tmp_path
    assert default_model_dir().parts[-3:] == (
        ".data",
        "models",
        "slotwise-gemma3",
    )  # what `make model` makes


def test_a_missing_default_model_is_an_error_and_the_random_standin_must_be_asked_for(
    monkeypatch, tmp_path, capsys
):
    """Issue 45: no command measures random weights unless asked (a benchmark script reads only the
    figures): evaluate without --model and without the made default stops with what to run."""
    monkeypatch.setattr(api, "MODEL_DIR", tmp_path / "not-made")
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"input": TEXTS[0], "category": "S", "target_scores": {"Brand": {"Diesel": 1}}})
    )
    out = tmp_path / "out.json"
    assert main(["evaluate", "--data", str(data), "--decoders", "hpd", "--json", str(out)]) == 2
    assert "run `make model`" in capsys.readouterr().err and not out.exists()
    with pytest.raises(api.ModelMissing, match="make model"):
        Extractor()
    assert (
        main(["evaluate", "--data", str(data), "--decoders", "hpd", "--random-standin", "--json", str(out)])
        == 0
    )
    assert "RANDOM STAND-IN" in capsys.readouterr().out
    assert json.loads(out.read_text())["random_standin"] is True


def test_evaluate_cli_writes_the_json_layout(model_dir, tmp_path, capsys):
    rows = [
        {
            "input": TEXTS[0],
            "category": "Shoes",
            "target_scores": {"Brand": {"Diesel": 1}, "Color": {"n/a": 1}},
        },
        {"input": TEXTS[2], "category": "Music", "target_scores": {"Brand": {"Fender": 1}}},
        {
            "id": 7,
            "category": "Music",
            "input_title": "Yamaha strings",
            "input_description": "steel",
            "target_scores": {"Brand": {"Yamaha": {"pid": [0], "score": 1}}, "Gauge": {"n/a": 1}},
        },
    ]
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "out.json"
    code = main(
        [
            "evaluate",
            "--data",
            str(data),
            "--model",
            str(model_dir),
            "--batch",
            "2",
            "--stack",
            "2",
            "--max-tokens",
            "3",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    res = json.loads(out.read_text())
    assert res["products"] == 3 and set(res["decoders"]) == {"ar", "ar-honest", "pld", "fork", "hpd"}
    keys = {
        "f1",
        "precision",
        "recall",
        "products_per_second",
        "seconds",
        "forward_steps",
        "tokens_per_step",
        "peak_memory_mb",
    }
    for d in res["decoders"].values():
        assert keys <= set(d)
    printed = capsys.readouterr().out
    assert "best settings" in printed and "hpd" in printed
    assert "load average" in printed and set(res["load_average"]) == {"start", "end"}


def test_evaluate_interleaves_the_decoders_chunk_by_chunk(model_dir, tmp_path):
    rows = [
        {"input": t, "category": c, "target_scores": {"Brand": {"Diesel": 1}}}
        for t, c in zip(TEXTS, ["Shoes", "Music", "Music"], strict=False)
    ]
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "out.json"
    args = ["evaluate", "--data", str(data), "--model", str(model_dir), "--decoders", "ar,ar-honest,hpd"]
    assert (
        main(args + ["--batch", "2", "--stack", "1", "--max-tokens", "3", "--chunk", "1", "--json", str(out)])
        == 0
    )
    res = json.loads(out.read_text())
    # one chunk per product (chunks never straddle categories), each timed for every decoder
    assert [c["products"] for c in res["chunks"]] == [1, 1, 1]
    every = {"ar", "ar-honest", "hpd"}
    assert all(set(c["seconds"]) == every and min(c["seconds"].values()) > 0 for c in res["chunks"])
    for d in ("ar", "ar-honest"):  # HPD against both AR decoders, spread over the chunks
        ratio = res["decoders"][d]["hpd_ratio"]
        assert ratio["pairs"] == 3 and ratio["min"] <= ratio["median"] <= ratio["max"]
        per_chunk = sorted(c["seconds"][d] / c["seconds"]["hpd"] for c in res["chunks"])
        assert ratio["median"] == pytest.approx(per_chunk[1])
    assert "hpd_ratio" not in res["decoders"]["hpd"]
    # the same values from either AR, so the same F1, tokens and forwards, but for the prefix
    # prefills: the prefix caches are shared, so whichever decodes a category first pays its one
    ar, honest = res["decoders"]["ar"], res["decoders"]["ar-honest"]
    assert (ar["f1"], ar["tokens_decoded"]) == (honest["f1"], honest["tokens_decoded"])
    assert abs(ar["forward_steps"] - honest["forward_steps"]) <= len(res["categories"])


def test_bfloat16_runs_every_decoder(model_dir):
    ex = Extractor(model_dir, dtype="bfloat16", attn="eager")
    for decoder in ("hpd", "fork", "ar", "ar-honest"):
        results, _ = ex.extract(DOCS[:2], SPECS, decoder=decoder, stack=2 if decoder == "hpd" else None)
        assert [set(r) for r in results] == [{"Brand", "Color"}] * 2


def test_auto_layout_is_measured_and_cached(extractor):
    extractor._layouts.clear()
    _, stats = extractor.extract(DOCS * 2, SPECS)  # 8 documents: one forward whatever the layout
    assert stats.layout == "stack=1 rows=16" and not extractor._layouts  # so no probe
    _, stats = extractor.extract(DOCS * 4, SPECS)
    assert stats.layout.startswith("stack=") and extractor.last_layout_costs
    assert all(cost > 0 for cost in extractor.last_layout_costs.values())
    assert len(extractor._layouts) == 1
    # another category's schema with longer gaps, same bucket: no new probe, the same timings
    # costed with its own largest gap (more decode steps per document)
    first = dict(extractor.last_layout_costs)
    longer = [AttributeSpec("Material", max_tokens=24), AttributeSpec("Size", max_tokens=20)]
    extractor.extract(DOCS * 4, longer)
    assert len(extractor._layouts) == 1
    assert extractor.last_layout_costs.keys() == first.keys()
    assert all(extractor.last_layout_costs[k] > first[k] for k in first)


def test_int8_quantization_replaces_the_linear_layers_and_still_decodes(model_dir):
    q = Extractor(model_dir, quantize="int8")
    from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

    linears = [m for m in q.model.modules() if isinstance(m, (torch.nn.Linear, Int8Linear))]
    assert linears and all(isinstance(m, Int8Linear) for m in linears)
    results, _ = q.extract(DOCS, SPECS)
    assert len(results) == len(DOCS) and all(set(r) == {"Brand", "Color"} for r in results)
    with pytest.raises(ValueError, match="expected one of int8"):
        Extractor(model_dir, quantize="int4")


def test_a_model_may_ask_for_bfloat16_on_the_cpu_and_an_explicit_dtype_wins(model_dir, tmp_path):
    import shutil

    target = tmp_path / "bf16"
    shutil.copytree(model_dir, target)
    assert Extractor(target).model.dtype == torch.float32  # no setting: float32 on the CPU
    (target / "slotwise.json").write_text(json.dumps({"cpu_dtype": "bfloat16"}))
    # granted where this CPU has bfloat16 in hardware; emulated it is slower than float32
    asked = torch.bfloat16 if modeling.native_cpu_bfloat16() else torch.float32
    assert Extractor(target).model.dtype == asked
    ex = Extractor(target, dtype="bfloat16")  # an explicit dtype wins on any CPU
    assert ex.model.dtype == torch.bfloat16
    results, _ = ex.extract(DOCS, SPECS)
    assert all(set(r) == {"Brand", "Color"} for r in results)
    assert Extractor(target, dtype="float32").model.dtype == torch.float32


def test_a_stored_bfloat16_becomes_float32_on_a_cpu_without_it():
    assert modeling.cpu_dtype("bfloat16", native_bfloat16=True) == "bfloat16"
    assert modeling.cpu_dtype("bfloat16", native_bfloat16=False) == "float32"
    assert modeling.cpu_dtype("float32", native_bfloat16=False) == "float32"
    assert modeling.cpu_dtype(None, native_bfloat16=True) is None  # no setting: the device default
