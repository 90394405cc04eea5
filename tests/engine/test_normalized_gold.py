"""evaluate --gold normalized on WDC-PAVE-style files: numbers decode in the gold's unit and compare
as numbers, attributes whose normalized gold is rarely a span decode free, and the F1 against the
extracted gold is reported beside it."""

from __future__ import annotations

import argparse
import json

from extraction.engine import data, normalized_gold
from extraction.engine.cli import main

TITLES = ["Acme Desk 47-1/4 in wide, oak", "Bolt Shelf 36 inch walnut", "Acme Table 20 in, pine"]
EXTRACTED = [
    {"Brand": "Acme", "Width": "47-1/4 in", "Product Type": "Desk"},
    {"Brand": "Bolt", "Width": "36 inch", "Product Type": "Shelf"},
    {"Brand": "Acme", "Width": "n/a", "Product Type": "Table"},
]
NORMALIZED = [
    {"Brand": "Acme", "Width": "120.0", "Product Type": "Office Furniture"},
    {"Brand": "Bolt", "Width": "91.4", "Product Type": "Shelving"},
    {"Brand": "Acme", "Width": "n/a", "Product Type": "Office Furniture"},
]


def record(i, gold):
    scores = {a: {v: {"pid": [0], "score": 1}} if v != "n/a" else {"n/a": 1} for a, v in gold.items()}
    return {"id": 100 + i, "category": "Office Products", "input_title": TITLES[i], "target_scores": scores}


def write_set(root):
    for name, golds in (("train.jsonl", EXTRACTED), ("train_normalized.jsonl", NORMALIZED)):
        (root / name).write_text("\n".join(json.dumps(record(i, g)) for i, g in enumerate(golds)))
    return root / "train.jsonl"


def test_paths_canonical_numbers_and_free_attributes(tmp_path):
    train = write_set(tmp_path)
    assert normalized_gold.paths(train) == (train, tmp_path / "train_normalized.jsonl")
    assert normalized_gold.paths(tmp_path / "train_normalized.jsonl") == (
        train,
        tmp_path / "train_normalized.jsonl",
    )
    assert (
        normalized_gold.canonical("Width", "120.02 cm")
        == "120.0"
        == normalized_gold.canonical("Width", "120")
    )
    assert normalized_gold.canonical("Size/Weight", "36.6 g") == "37"
    assert normalized_gold.canonical("Brand", "120.02 cm") == "120.02 cm"  # not a number attribute
    products = data.load(tmp_path / "train_normalized.jsonl")
    assert normalized_gold.free_attributes(products) == {"Product Type"}  # Brand is verbatim, Width a number


def test_evaluate_scores_normalized_gold_and_reports_the_extracted_f1(model_dir, tmp_path):
    train = write_set(tmp_path)
    out, preds = tmp_path / "out.json", tmp_path / "preds.jsonl"
    args = ["evaluate", "--data", str(train), "--model", str(model_dir), "--decoders", "ar,hpd", "--gold"]
    args += ["normalized", "--batch", "2", "--stack", "1", "--max-tokens", "4", "--json", str(out)]
    assert main(args + ["--predictions", str(preds)]) == 0
    res = json.loads(out.read_text())
    assert res["gold"] == "normalized" and "Width" in res["numbers"] and res["free_text"] == ["Product Type"]
    for d in res["decoders"].values():
        assert d["gold"] == "normalized" and set(d["extracted_gold"]) == {"f1", "precision", "recall"}
    for line in map(json.loads, preds.read_text().splitlines()):
        assert line["gold"]["Width"] in (["120.0"], ["91.4"], ["n/a"])  # the normalized gold is scored
        for d in ("ar", "hpd"):
            width = line[d]["Width"][0]
            assert width == "n/a" or width.endswith(" cm"), width  # a number, in the gold's unit


def test_a_number_in_the_gold_unit_scores_against_normalized_gold_and_its_text_against_extracted(tmp_path):
    from extraction.engine.api import ValueResult
    from extraction.engine.evaluate.decoder_runs import Run, score_normalized, with_gold

    write_set(tmp_path)
    products = data.load(tmp_path / "train_normalized.jsonl")
    extracted = with_gold(products, data.load(tmp_path / "train.jsonl"))
    run = Run("hpd", {}, predictions=[{}])
    run.predictions[0] = {
        "Width": ValueResult("120.02 cm", 0.9, 3, False, "47.25 in"),  # 47.25 in = 120.015 cm
        "Brand": ValueResult("Acme", 0.9, 2, False, "Acme"),
        "Product Type": ValueResult("Desk", 0.9, 2, False, "Desk"),
    }
    schemas = {"Office Products": ["Brand", "Width", "Product Type"]}
    ext = score_normalized(run, products[:1], extracted[:1], schemas)
    assert run.report.per_attribute["Width"].VC == 1 and run.report.per_attribute["Brand"].VC == 1
    assert run.report.per_attribute["Product Type"].VW == 1  # "Desk" is not "Office Furniture"
    assert ext.per_attribute["Product Type"].VC == 1 and ext.per_attribute["Width"].VW == 1


def test_closed_lists_are_read_from_the_normalization_instructions(tmp_path):
    guide = tmp_path / normalized_gold.DESCRIPTIONS
    guide.write_text(
        "Category,Attribute,Normalization_instruction\n"
        'Office Products,Color(s),"Categorize the color into ONLY ONE of the following options:\n-Black\n'
        "-Gray and Metallic \n\nIf the description mentions more than two colors, classify it as 'Other'.\"\n"
        'Office Products,Width,"Convert and standardize the Width measurement to centimeters (cm)."\n'
        'Jewelry,Product Type,"Give the Product Type as EXACTLY ONE of the following:\n- Rings/Bands\n- Earrings"\n'
        "Jewelry,Brand,Return the Brand in  Uppercase Format\n"
        "Jewelry,Material,None\n"
    )
    # an instruction that normalizes as text (not a list, not a number of NUMBERS, not "None")
    assert normalized_gold.text_instructions(guide) == {
        "Jewelry": {"Brand": "Return the Brand in Uppercase Format"}
    }
    assert normalized_gold.instruction_lists(guide) == {
        "Office Products": {
            "Color(s)": ["Black", "Gray and Metallic"]
        },  # the rule after the list is not a value
        "Jewelry": {"Product Type": ["Rings/Bands", "Earrings"]},
    }
    train = [data.Product("1", "Jewelry", "anklet", {"Product Type": ["Anklets"], "Width": ["3.0"]})]
    assert normalized_gold.closed_lists(guide, train)["Jewelry"] == {
        "Product Type": ["Rings/Bands", "Earrings", "Anklets"]
    }


def test_evaluate_decodes_a_closed_list_as_an_enumeration_of_its_category(model_dir, tmp_path):
    train = write_set(tmp_path)
    lists = {"Office Products": {"Product Type": ["Office Furniture", "Shelving", "Paper Products"]}}
    options = normalized_gold.options_path(tmp_path / "train_normalized.jsonl")
    options.write_text(json.dumps(lists))
    out, preds = tmp_path / "out.json", tmp_path / "preds.jsonl"
    args = ["evaluate", "--data", str(train), "--model", str(model_dir), "--decoders", "ar,hpd", "--gold"]
    args += ["normalized", "--batch", "2", "--stack", "1", "--max-tokens", "4", "--json", str(out)]
    assert main(args + ["--predictions", str(preds)]) == 0
    res = json.loads(out.read_text())
    assert (
        res["enumerations"] == ["Product Type"] and res["free_text"] == [] and res["options"] == str(options)
    )
    for line in map(json.loads, preds.read_text().splitlines()):
        for d in ("ar", "hpd"):
            assert line[d]["Product Type"][0] in lists["Office Products"]["Product Type"] + ["n/a"]


def test_evaluate_gives_an_attribute_its_text_instruction_as_its_description(tmp_path):
    from extraction.engine.evaluate.decoder_runs import load_inputs

    train = write_set(tmp_path)
    told = normalized_gold.instructions_path(tmp_path / "train_normalized.jsonl")
    told.write_text(json.dumps({"Office Products": {"Brand": "Return the Brand in Uppercase Format"}}))
    args = argparse.Namespace(data=str(train), gold="normalized", limit=None, options=None)
    types = load_inputs(args).types
    assert types.spec("Brand", 8, "Office Products").description == "Return the Brand in Uppercase Format"
    assert types.spec("Brand", 8, "Jewelry").description == ""  # another category's Brand: none
    plain = argparse.Namespace(data=str(train), gold="extracted", limit=None, options=None)
    assert load_inputs(plain).types.spec("Brand", 8, "Office Products").description == ""
