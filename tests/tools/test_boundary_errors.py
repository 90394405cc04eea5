"""tools/bench/boundary_errors.py: wrong values sorted into span boundary errors and others, per
attribute, from evaluate --predictions lines."""

from __future__ import annotations

import json

from tools.bench.boundary_errors import error_kind, main, tallies


def test_a_wrong_value_is_too_long_too_short_or_other():
    assert error_kind("Light Roast Coffee", ["Light Roast"]) == "too long"
    assert error_kind("finn", ["Finn Comfort"]) == "too short"  # case does not make it other
    assert error_kind("7 - 6.2 oz", ["6.2 oz", "6.2 Ounce"]) == "too long"
    assert error_kind("Earl Grey Jasmine", ["Jasmine"]) == "too long"
    assert error_kind("Green", ["Jasmine"]) == "other"
    assert error_kind("Peppermint Tea", ["Mint"]) == "other"  # another word, not a boundary
    assert error_kind("Green", ["n/a"]) == "other"  # an n/a form holds no span


def write(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_tallies_count_shown_judged_values_and_their_confidences(tmp_path, capsys):
    lines = [
        {
            "key": "1",
            "category": "Tea",
            "gold": {"Brand": ["Terrasoul Superfoods"], "Flavor": ["Jasmine"], "Size": ["n/a"]},
            "hpd": {
                "Brand": ["Terrasoul", 0.9],
                "Flavor": ["Jasmine", 0.8],
                "Size": ["2 oz", 0.7],
                "Form": ["Bags", 0.6],
            },
        },
        {
            "key": "2",
            "category": "Tea",
            "gold": {"Brand": ["Tetley"], "Flavor": ["Mint"]},
            "hpd": {"Brand": ["Tetley", 0.5], "Flavor": ["Peppermint Tea", 0.3]},
        },
        {"key": "3", "category": "Tea", "gold": {"Brand": ["Lipton"]}, "hpd": {"Brand": ["n/a", 0.2]}},
    ]
    write(tmp_path / "before.jsonl", lines)
    t = tallies(str(tmp_path / "before.jsonl"), "hpd")
    # Size (gold n/a: NV), Form (unjudged) and the n/a of product 3 (not shown) count nowhere
    assert set(t) == {"(all)", "Brand", "Flavor"}
    assert (t["Brand"].right, t["Brand"].wrong["too short"], t["Brand"].wrongs) == (1, 1, 1)
    assert (t["Flavor"].right, t["Flavor"].wrong["other"], t["Flavor"].boundary) == (1, 1, 0)
    everything = t["(all)"]
    assert (everything.right, everything.wrongs, everything.boundary) == (2, 2, 1)
    assert abs(everything.right_confidence / everything.right - 0.65) < 1e-9
    assert abs(everything.boundary_confidence - 0.9) < 1e-9
    # before and after side by side: the after file's Brand is right
    lines[0]["hpd"]["Brand"] = ["Terrasoul Superfoods", 0.95]
    write(tmp_path / "after.jsonl", lines)
    assert main([str(tmp_path / "before.jsonl"), str(tmp_path / "after.jsonl")]) == 0
    brand = next(r for r in capsys.readouterr().out.splitlines() if r.startswith("Brand"))
    assert "1 1 (0/1, 100%) 0.50/0.90" in brand and "2 0 (0/0, -) 0.72/-" in brand
