"""evaluate --categories and `python -m extraction pool`: runs side by side over disjoint categories,
joined, give the quality of one run over every product, and every chunk's speed ratio; files that
cannot be joined are refused with the reason."""

from __future__ import annotations

import json

from extraction.engine.cli import main
from tests.support.tiny_models import TEXTS

ROWS = [
    {"input": TEXTS[0], "category": "Shoes", "target_scores": {"Brand": {"Diesel": 1}, "Color": {"n/a": 1}}},
    {"input": TEXTS[1], "category": "Tea", "target_scores": {"Brand": {"green": 1}}},
    {"input": TEXTS[2], "category": "Music", "target_scores": {"Brand": {"Fender": 1}, "Size": {"10-46": 1}}},
    {"input": TEXTS[3], "category": "Shoes", "target_scores": {"Brand": {"Vitamin": 1}}},
]


def evaluate(model_dir, tmp_path, name: str, *extra: str) -> dict:
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS))
    out = tmp_path / f"{name}.json"
    args = ["evaluate", "--data", str(data), "--model", str(model_dir), "--decoders", "ar,fork,hpd"]
    args += ["--batch", "2", "--stack", "1", "--rows", "2", "--max-tokens", "3", "--chunk", "1"]
    assert main([*args, "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_pooled_halves_score_as_one_run_over_every_product(model_dir, tmp_path, capsys):
    whole = evaluate(model_dir, tmp_path, "whole")
    capsys.readouterr()
    shoes = evaluate(model_dir, tmp_path, "shoes", "--categories", "Shoes")
    progress = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if "  chunk " in line]
    assert progress == ["  chunk 1/2 (1 products)", "  chunk 2/2 (1 products)"]  # one line per chunk
    rest = evaluate(model_dir, tmp_path, "rest", "--categories", "Music,Tea")
    assert (shoes["products"], rest["products"]) == (2, 2)
    assert (shoes["categories"], rest["categories"]) == (["Shoes"], ["Music", "Tea"])
    capsys.readouterr()
    pooled_path = tmp_path / "pooled.json"
    files = [str(tmp_path / "shoes.json"), str(tmp_path / "rest.json")]
    assert main(["pool", *files, "--json", str(pooled_path)]) == 0
    out = capsys.readouterr().out
    pooled = json.loads(pooled_path.read_text())["decoders"]
    assert "pooled: 2 files, 4 products, 4 chunks" in out
    for d in ("ar", "fork", "hpd"):
        one = whole["per_category"][d]
        summed = {k: sum(c[k] for c in one.values()) for k in ("VC", "VW", "NV", "VN", "NN")}
        assert {k: pooled[d][k] for k in summed} == summed  # greedy: the same values as one run
        assert pooled[d]["f1"] == whole["decoders"][d]["f1"]
    # HPD's ratio over AR: one pair per chunk of either file, their median among them
    chunks = shoes["chunks"] + rest["chunks"]
    ratios = sorted(c["seconds"]["ar"] / c["seconds"]["hpd"] for c in chunks)
    r = pooled["ar"]["hpd_ratio"]
    assert r["pairs"] == 4 and (r["min"], r["max"]) == (ratios[0], ratios[-1])
    assert r["median"] == (ratios[1] + ratios[2]) / 2
    assert "hpd_ratio" not in pooled["hpd"]
    verdict = "ok" if r["median"] >= 4.0 else "BELOW"
    assert f"speed bar hpd/ar: {r['median']:.2f}x median (bar 4.0x) {verdict}" in out


def test_a_category_in_two_files_or_another_model_is_refused(model_dir, tmp_path, capsys):
    evaluate(model_dir, tmp_path, "a", "--categories", "Shoes,Tea")
    evaluate(model_dir, tmp_path, "b", "--categories", "Tea")
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    capsys.readouterr()
    assert main(["pool", a, b]) == 2
    assert f"category 'Tea' is in {a} and in {b}" in capsys.readouterr().err
    doc = json.loads((tmp_path / "b.json").read_text())
    doc["categories"], doc["model_revision"] = ["Music"], "another"
    (tmp_path / "b.json").write_text(json.dumps(doc))
    assert main(["pool", a, b]) == 2
    assert "model_revision is 'another'" in capsys.readouterr().err
    (tmp_path / "c.json").write_text("{}")
    assert main(["pool", a, str(tmp_path / "c.json")]) == 2
    assert "not an evaluate --json file" in capsys.readouterr().err


def test_an_unknown_category_is_named_with_the_files_categories(model_dir, tmp_path, capsys):
    data = tmp_path / "mini.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS))
    args = ["evaluate", "--data", str(data), "--model", str(model_dir), "--categories", "Shoes,Hats"]
    assert main(args) == 2
    assert f"--categories: Hats not in {data} (its categories: Music, Shoes, Tea)" in capsys.readouterr().err
