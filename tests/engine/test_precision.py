"""`python -m extraction precision`: every precision and decoder on the same products, interleaved;
the table gives each one's F1 against float32's and its speed ratio, and the verdict never picks a
precision that loses quality or one that drops the constraint."""

from __future__ import annotations

import json

import pytest

from extraction.engine.cli import main
from extraction.engine.evaluate import precision
from tests.support.tiny_models import TEXTS

ROWS = [
    {"input": TEXTS[0], "category": "Shoes", "target_scores": {"Brand": {"Diesel": 1}, "Color": {"n/a": 1}}},
    {"input": TEXTS[1], "category": "Shoes", "target_scores": {"Brand": {"Nike": 1}}},
    {"input": TEXTS[2], "category": "Music", "target_scores": {"Brand": {"Fender": 1}}},
    {"input": TEXTS[3], "category": "Music", "target_scores": {"Brand": {"Yamaha": 1}}},
]


def test_the_precision_table_interleaves_every_precision_and_decoder(model_dir, tmp_path, capsys):
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS))
    args = ["precision", "--data", str(data), "--model", str(model_dir), "--chunk", "1"]
    assert main([*args, "--precisions", "float32,bfloat16,float32-free"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["hpd"], ["ar"])]
    assert {(r[0], r[1]) for r in rows} == {
        (d, p) for d in ("hpd", "ar") for p in ("float32", "bfloat16", "float32-free")
    }
    assert all(r[3] == "+0.0" for r in rows if r[1] == "float32")  # float32 is the reference
    assert "chunks: 4;" in out  # one product per chunk, every configuration on each
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith("fastest at equal F1") and not verdict.endswith("float32-free")


def test_the_verdict_skips_a_faster_precision_that_loses_quality():
    class Report:
        def __init__(self, f1):
            self.micro = type("M", (), {"f1": f1})()

    def run(f1):
        return type("R", (), {"report": Report(f1)})()

    timing = precision.Interleaved(
        sizes=[1, 1],
        seconds=[{"hpd/float32": 2.0, "hpd/bfloat16": 1.0, "hpd/int8": 0.5}] * 2,
    )
    runs = {"hpd/float32": run(0.700), "hpd/bfloat16": run(0.698), "hpd/int8": run(0.650)}
    best = precision.report(precision.Bench(runs, timing), ["hpd"], ["float32", "bfloat16", "int8"])
    assert best == "bfloat16"  # int8 is fastest but 5 points worse; bfloat16 is 0.2 below: equal


def test_the_reference_can_be_the_cpu_default(model_dir, tmp_path, capsys):
    """--base bfloat16 with bfloat16-free beside it: what the constraint costs at the CPU default."""
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS))
    args = ["precision", "--data", str(data), "--model", str(model_dir), "--chunk", "2", "--decoders", "hpd"]
    assert main([*args, "--precisions", "bfloat16,bfloat16-free", "--base", "bfloat16"]) == 0
    out = capsys.readouterr().out
    assert "x bfloat16 (min-max)" in out
    rows = {r[1]: r for r in (line.split() for line in out.splitlines()) if r[:1] == ["hpd"]}
    assert rows["bfloat16"][3] == "+0.0" and rows["bfloat16"][6].startswith("1.00x")
    assert out.strip().splitlines()[-1].endswith(": bfloat16")  # never the unconstrained one


def test_a_reference_outside_the_precisions_is_refused(model_dir, tmp_path):
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS))
    args = ["precision", "--data", str(data), "--model", str(model_dir), "--precisions", "float32"]
    with pytest.raises(SystemExit, match="--base bfloat16: not among --precisions float32"):
        main([*args, "--base", "bfloat16"])
