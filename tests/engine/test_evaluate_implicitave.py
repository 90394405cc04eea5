"""evaluate on ImplicitAVE: a .tsv grouped by id into products, enumerations from the options file
of its domain (or --options), the same metric and --json layout; micro F1 is the accuracy."""

from __future__ import annotations

import json

from extraction.engine import data
from extraction.engine.cli import main
from tests.support.toy_training import HEADER, ROWS

OPTIONS = {
    "Sleeve Style": ["Long Sleeve", "Short Sleeve", "Sleeveless"],
    "Neckline": ["V-Neck", "Scoop Neck"],
}
OTHER = {"Form": ["Powder", "Bags/Packets"], "Neckline": ["Crew"]}  # another domain's options


def write_set(root):
    (root / "Clothing").mkdir()
    tsv = root / "Clothing" / "val.tsv"
    tsv.write_text(HEADER + "".join(f"{i}\t{i}.jpg\t{c}\t{t}\t{a}\t{v}\n" for i, c, t, a, v in ROWS))
    (root / "options_Clothing.json").write_text(json.dumps(OPTIONS))
    (root / "options_Food.json").write_text(json.dumps(OTHER))
    return tsv


def test_it_reads_a_tsv_grouped_by_id_and_finds_its_options_file(tmp_path):
    tsv = write_set(tmp_path)
    products = data.load(tsv)
    assert [p.key for p in products] == ["B1", "B2", "B3"]
    assert products[0].gold == {"Sleeve Style": ["Short Sleeve"], "Neckline": ["V-Neck"]}
    assert products[1].text == '"Milk" Nursingwear Sleek Striped Maxi'  # a quote is text, the mark is gone
    assert data.options_for(tsv, products).name == "options_Clothing.json"
    assert data.schemas(products) == {
        "Dresses": ["Sleeve Style", "Neckline"],
        "Shirts & Tops": ["Sleeve Style"],
    }


def run(model_dir, tmp_path, *extra) -> tuple[dict, list[dict]]:
    tsv = tmp_path / "Clothing" / "val.tsv"
    if not tsv.exists():
        write_set(tmp_path)
    out, preds = tmp_path / "out.json", tmp_path / "preds.jsonl"
    args = ["evaluate", "--data", str(tsv), "--model", str(model_dir), "--decoders", "ar,fork,hpd"]
    args += [
        "--batch",
        "2",
        "--stack",
        "2",
        "--max-tokens",
        "2",
        "--json",
        str(out),
        "--predictions",
        str(preds),
    ]
    assert main(args + list(extra)) == 0
    lines = [json.loads(line) for line in preds.read_text().splitlines()]
    return json.loads(out.read_text()), lines


def outside(lines, options) -> list:
    return [
        (d, a, v[0])
        for line in lines
        for d in ("ar", "fork", "hpd")
        for a, v in line[d].items()
        if v[0] not in options[a]
    ]


def test_evaluate_scores_implicitave_with_enumerations_and_f1_is_accuracy(model_dir, tmp_path):
    res, lines = run(model_dir, tmp_path)
    assert res["options"].endswith("options_Clothing.json") and res["typed"] is True
    assert res["enumerations"] == ["Neckline", "Sleeve Style"] and res["na_allowed_in_enumerations"] is False
    assert res["products"] == 3 and set(res["decoders"]) == {"ar", "fork", "hpd"}
    for d in res["decoders"].values():
        assert abs(d["f1"] - d["accuracy"]) < 1e-12  # no n/a: every judged pair gets a listed value
    assert outside(lines, OPTIONS) == []  # every value of every decoder is one of the options
    assert set(lines[0]["hpd"]) == {"Sleeve Style", "Neckline"}
    assert set(lines[2]["hpd"]) == {"Sleeve Style"}  # B3's category schema: Sleeve Style only
    # the control: decoded as text, the random model writes values outside the lists
    _, free = run(model_dir, tmp_path, "--no-typed")
    assert outside(free, OPTIONS) != []


def test_options_can_be_named_and_apply_to_any_file(model_dir, tmp_path):
    res, lines = run(model_dir, tmp_path, "--options", str(tmp_path / "options_Food.json"))
    assert res["options"].endswith("options_Food.json") and res["enumerations"] == ["Form", "Neckline"]
    assert {line["hpd"]["Neckline"][0] for line in lines if "Neckline" in line["hpd"]} == {"Crew"}
