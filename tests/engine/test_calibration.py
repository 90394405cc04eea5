"""Expected calibration error, the Platt scaling fit, and the Extractor applying a stored scaling (or an
older file's temperature)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from extraction.engine import calibration
from extraction.engine.api import (
    AttributeSpec,
    Document,
    Extractor,
    calibration_scalings,
    na_scalings,
)
from extraction.engine.calibration import Scaling
from extraction.engine.cli import main
from extraction.engine.metric import is_na
from tests.support.tiny_models import TEXTS


def test_ece_by_hand():
    # bin [0.9, 1.0]: 0.95 and 1.0 (1.0 goes to the last bin), 1 of 2 correct: |0.5 - 0.975| = 0.475
    # bin [0.2, 0.3): 0.25 x 2, both wrong: |0 - 0.25| = 0.25
    # bin [0.6, 0.7): 0.6, correct: |1 - 0.6| = 0.4
    conf = [0.95, 1.0, 0.25, 0.25, 0.6]
    correct = [True, False, False, False, True]
    expected = 2 / 5 * 0.475 + 2 / 5 * 0.25 + 1 / 5 * 0.4
    assert calibration.ece(conf, correct) == pytest.approx(expected)
    assert calibration.ece([0.7] * 10, [True] * 7 + [False] * 3) == pytest.approx(0.0)
    assert calibration.ece([], []) is None


def test_temperature_mapping():
    """A number is a temperature T: slope 1/T, no bias."""
    assert calibration.apply_calibration(0.8, None) == 0.8
    assert calibration.apply_calibration(0.8, 1.0) == 0.8
    assert calibration.apply_calibration(0.5, 3.0) == pytest.approx(0.5)
    # T > 1 pulls towards 0.5, T < 1 pushes away; logit scales by 1/T
    c = calibration.apply_calibration(0.9, 2.0)
    assert 0.5 < c < 0.9 and math.log(c / (1 - c)) == pytest.approx(math.log(9) / 2)
    assert calibration.apply_calibration(0.9, 0.5) > 0.9
    assert calibration.apply_calibration(0.0, 2.0) == 0.0  # the limits stay
    assert calibration.apply_calibration(1.0, 0.5) == 1.0
    assert calibration.apply_calibration(1 - 1e-9, 2.0) == pytest.approx(1000 / 1001)  # clipped to 1 - 1e-6
    arr = calibration.calibrate([0.2, 0.9, 0.0], 2.0)
    assert arr[1] == pytest.approx(calibration.apply_calibration(0.9, 2.0)) and arr[2] == 0.0


def overconfident(n: int, seed: int = 0):
    """True correctness probability p; the model reports sigmoid(3 * logit(p)) (T* = 3)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, n)
    correct = rng.uniform(size=n) < p
    conf = 1 / (1 + np.exp(-3 * np.log(p / (1 - p))))
    return conf, correct


def test_scaling_mapping_and_reading():
    assert calibration.apply_calibration(0.5, Scaling(1.0, math.log(3))) == pytest.approx(
        0.75
    )  # bias moves 0.5
    c = calibration.apply_calibration(0.9, Scaling(0.5, -1.0))
    assert math.log(c / (1 - c)) == pytest.approx(0.5 * math.log(9) - 1.0)
    assert calibration.apply_calibration(0.0, Scaling(2.0, 3.0)) == 0.0  # the limits stay
    assert Scaling.of(2.0) == Scaling(0.5, 0.0) and Scaling.of({"slope": 0.8, "bias": -1.9}) == Scaling(
        0.8, -1.9
    )
    assert Scaling.of(Scaling.of(4.0).stored()) == Scaling(0.25, 0.0)
    for bad in (
        None,
        -1,
        0,
        True,
        "x",
        float("nan"),
        {"slope": -1, "bias": 0},
        {"bias": 1.0},
        {"slope": "a"},
    ):
        assert Scaling.of(bad) is None


def test_fit_recovers_the_temperature_and_lowers_nll_and_ece():
    conf, correct = overconfident(4000)
    fit = calibration.fit_scaling(conf, correct)
    assert 2.5 < 1 / fit.slope < 3.6 and abs(fit.bias) < 0.2  # a pure temperature: no bias to find
    assert calibration.nll(conf, correct, fit) < calibration.nll(conf, correct) - 0.05
    raw, cal = calibration.ece(conf, correct), calibration.ece(calibration.calibrate(conf, fit), correct)
    assert raw > 0.1 and cal < 0.04 and cal < raw / 3


def test_a_bias_no_temperature_can_fix_is_fitted():
    """A model that is right half as often as it says everywhere (logit shifted by +2): a
    temperature alone leaves a large error, the bias removes it (what the dev sets showed)."""
    rng = np.random.default_rng(2)
    p = rng.uniform(0.05, 0.95, 4000)
    correct = rng.uniform(size=p.size) < p
    conf = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + 2.0)))
    fit = calibration.fit_scaling(conf, correct)
    assert fit.bias == pytest.approx(-2.0, abs=0.3) and fit.slope == pytest.approx(1.0, abs=0.15)
    temperature_only = min(
        calibration.ece(calibration.calibrate(conf, t), correct) for t in np.linspace(0.2, 10, 50)
    )
    assert calibration.ece(calibration.calibrate(conf, fit), correct) < 0.04 < temperature_only


def test_cross_fitting_scores_out_of_fold_and_summary_reports_it():
    conf, correct = overconfident(2000, seed=1)
    groups = np.arange(conf.size) // 4  # 4 points per "product"
    cal, fits = calibration.cross_fitted(conf, correct, groups)
    assert len(fits) == 2 and all(2.3 < 1 / f.slope < 3.9 for f in fits)
    odd = (groups % 2) == 1
    assert cal[odd] == pytest.approx(calibration.calibrate(conf[odd], fits[1]))  # fitted on the evens
    s = calibration.summary(conf, correct, groups, stored=3.0)
    assert s["points"] == 2000 and s["ece_cross_fitted"] < s["ece_raw"] / 2
    assert s["ece_stored"] < s["ece_raw"] / 2 and 2.5 < 1 / s["scaling"]["slope"] < 3.6


def test_fit_without_enough_signal_is_the_identity():
    assert calibration.fit_scaling([0.9] * 5, [True, False] * 2 + [True]) == Scaling()  # too few
    assert calibration.fit_scaling([0.9] * 50, [True] * 50) == Scaling()  # one class
    assert calibration.summary([], [], [])["ece_raw"] is None


def test_calibration_block_reading():
    assert calibration_scalings(None, True) == {}
    # fork follows hpd; AR without the prefix cache writes the same outputs as AR, so it follows
    # ar, and so do both honest ARs (the same values at another cost); HPD under dense rows writes the same outputs as HPD, so it follows hpd
    platt = {"slope": 0.8, "bias": -1.9}
    assert calibration_scalings({"hpd": 2.0, "ar": platt}, True) == {
        "hpd": Scaling(0.5),
        "ar": Scaling(0.8, -1.9),
        "fork": Scaling(0.5),
        "ar-uncached": Scaling(0.8, -1.9),
        "ar-honest": Scaling(0.8, -1.9),
        "ar-honest-static": Scaling(0.8, -1.9),
        "hpd-dense": Scaling(0.5),
    }
    assert calibration_scalings({"hpd": 2.0, "fork": 1.25}, False)["fork"] == Scaling(0.8)
    assert calibration_scalings({"hpd": 2.0, "extractive": True}, False) == {}  # other decoding mode
    assert calibration_scalings({"hpd": -1, "ar": "x", "pld": True, "products": 10}, True) == {}


DOCS = [Document("a", TEXTS[0]), Document("b", TEXTS[2])]
SPECS = [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Color", "main colour", 3)]


def test_the_extractor_applies_the_stored_scaling(model_dir, tmp_path):
    calibrated = tmp_path / "calibrated"
    shutil.copytree(model_dir, calibrated)
    (calibrated / "slotwise.json").write_text(
        json.dumps({"calibration": {"hpd": 2.5, "ar": {"slope": 2.0, "bias": -0.5}, "extractive": False}})
    )
    raw_ex = Extractor(model_dir)
    cal_ex = Extractor(calibrated)
    off_ex = Extractor(calibrated, calibrate=False)
    hpd, ar = Scaling(0.4), Scaling(2.0, -0.5)  # an older file's temperature, a Platt scaling
    assert cal_ex.scalings == {
        "hpd": hpd,
        "ar": ar,
        "fork": hpd,
        "ar-uncached": ar,
        "ar-honest": ar,
        "ar-honest-static": ar,
        "hpd-dense": hpd,
    }
    decoders = (
        ("hpd", hpd),
        ("fork", hpd),
        ("ar", ar),
        ("ar-uncached", ar),
        ("ar-honest", ar),
        ("hpd-dense", hpd),
        ("pld", None),
    )
    for decoder, t in decoders:
        raw, _ = raw_ex.extract(DOCS, SPECS, decoder=decoder, stack=1, batch=2)
        cal, _ = cal_ex.extract(DOCS, SPECS, decoder=decoder, stack=1, batch=2)
        off, _ = off_ex.extract(DOCS, SPECS, decoder=decoder, stack=1, batch=2)
        for r, c, o in zip(raw, cal, off, strict=True):
            for name in r:
                assert c[name].text == r[name].text and o[name].confidence == r[name].confidence
                want = calibration.apply_calibration(r[name].confidence, t)
                assert c[name].confidence == pytest.approx(want, abs=1e-9)
        inside = [(r[n].confidence, c[n].confidence) for r, c in zip(raw, cal, strict=True) for n in r]
        inside = [(a, b) for a, b in inside if 0.0 < a < 1.0]
        if decoder in ("hpd", "fork"):
            assert inside  # the tiny model's values have confidences strictly inside (0, 1)
        if t is not None:  # the mapping did something
            assert all(abs(a - b) > 1e-6 for a, b in inside)


def test_values_and_na_take_their_own_stored_scalings(model_dir, tmp_path):
    calibrated = tmp_path / "calibrated"
    shutil.copytree(model_dir, calibrated)
    block = {"hpd": 2.5, "na": {"hpd": {"slope": 1.5, "bias": 0.7}}, "extractive": False}
    (calibrated / "slotwise.json").write_text(json.dumps({"calibration": block}))
    na = Scaling(1.5, 0.7)
    assert na_scalings(block, False) == {"hpd": na, "fork": na, "hpd-dense": na}
    assert na_scalings({"hpd": 2.5}, False) == {} and na_scalings(block, True) == {}
    raw, _ = Extractor(model_dir).extract(DOCS, SPECS, decoder="hpd", stack=1)
    cal, _ = Extractor(calibrated).extract(DOCS, SPECS, decoder="hpd", stack=1)
    for r, c in zip(raw, cal, strict=True):
        for name, v in r.items():
            t = na if is_na(v.text) else 2.5
            assert c[name].confidence == pytest.approx(
                calibration.apply_calibration(v.confidence, t), abs=1e-9
            )


def test_enumeration_values_reach_the_prompt_only_for_a_model_trained_so(model_dir, tmp_path):
    listing = tmp_path / "listing"
    shutil.copytree(model_dir, listing)
    (listing / "slotwise.json").write_text(json.dumps({"enum_values_in_prompt": True}))
    enum = AttributeSpec("Color", max_tokens=4, kind="enum", allowed_values=("Black", "White"))
    for directory, listed in ((model_dir, False), (listing, True)):
        ex = Extractor(directory)
        schema = ex.schema([SPECS[0], enum])
        prompt = ex.tokenizer.decode(schema.prefix_ids)
        assert ("Black | White" in prompt) is listed
        assert schema.attributes[1].description == ""  # the spec itself is unchanged
        assert ex.extract(DOCS, [SPECS[0], enum], decoder="hpd", stack=1)[0][0]["Color"].text in (
            "Black",
            "White",
            "n/a",
        )


def test_evaluate_reports_na_and_calibration_and_fits_into_slotwise_json(model_dir, tmp_path, capsys):
    target = tmp_path / "model"
    shutil.copytree(model_dir, target)
    (target / "slotwise.json").write_text(json.dumps({"default_budget": 3, "note": "kept"}))
    rows = [
        {
            "input": TEXTS[0],
            "category": "Shoes",
            "target_scores": {"Brand": {"Diesel": 1}, "Color": {"n/a": 1}},
        },
        {"input": TEXTS[1], "category": "Shoes", "target_scores": {"Brand": {"n/a": 1}}},  # Color unjudged
        {"input": TEXTS[2], "category": "Music", "target_scores": {"Brand": {"Fender": 1}}},
    ]
    data = tmp_path / "set" / "dev.jsonl"
    data.parent.mkdir()
    data.write_text("\n".join(json.dumps(r) for r in rows))
    out = tmp_path / "out.json"
    args = ["evaluate", "--data", str(data), "--model", str(target), "--decoders", "hpd,ar"]
    args += ["--stack", "1", "--batch", "2", "--threads", "1", "--json", str(out)]
    assert main([*args, "--predictions", str(tmp_path / "pred.jsonl")]) == 0
    res = json.loads(out.read_text())
    lines = [json.loads(x) for x in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert [x["gold"] for x in lines] == [
        {"Brand": ["Diesel"], "Color": ["n/a"]},
        {"Brand": ["n/a"]},
        {"Brand": ["Fender"]},
    ]
    assert set(lines[1]["hpd"]) == {"Brand", "Color"} and set(lines[2]["ar"]) == {
        "Brand"
    }  # the category schema
    for x in lines:
        for d in ("hpd", "ar"):
            text, conf = x[d]["Brand"]
            assert isinstance(text, str) and 0.0 <= conf <= 1.0
    for d in ("hpd", "ar"):
        sm = res["decoders"][d]
        assert sm["gold_na"] == 2 and 0 <= sm["NV"] <= 2 and sm["unjudged"] == 1
        assert sm["na_accuracy"] == pytest.approx(1 - sm["NV"] / 2)
        cal = sm["calibration"]
        assert cal["points"] == len(res["calibration_points"][d]) and "ece_cross_fitted" in cal
        na = sm["calibration_na"]  # the n/a predicted on judged pairs, apart from the values
        assert na["points"] == len(res["calibration_points_na"][d])
        assert na["points"] + cal["points"] == 4  # every judged pair is one or the other
    printed = capsys.readouterr().out
    assert "n/a acc" in printed and "ECE raw" in printed
    assert json.loads((target / "slotwise.json").read_text()) == {"default_budget": 3, "note": "kept"}

    # fit: pooled with the earlier output, written beside the other keys; the Extractor then uses it
    assert main(args[:-2] + ["--fit-calibration", "--calibration-with", str(out)]) == 0
    conf = json.loads((target / "slotwise.json").read_text())
    assert conf["default_budget"] == 3 and conf["note"] == "kept"
    block = conf["calibration"]
    assert block["products"] == 6 and block["data"] == ["set/dev.jsonl", "set/dev.jsonl"]
    assert block["extractive"] is False and set(block["points"]) == {"hpd", "ar"}
    assert block["points"]["hpd"] == 2 * res["decoders"]["hpd"]["calibration"]["points"]
    assert block["hpd"]["slope"] > 0 and block["ar"]["slope"] > 0
    for d in ("hpd", "ar"):  # threshold 0 takes every value (a tiny random model may give none)
        n = block["points"][d]
        assert [row[2] for row in block["precision_curve"][d][:1]] == ([n] if n else [])
    assert Extractor(target).scalings["fork"] == Scaling.of(block["hpd"])
    assert set(block["na"]) == {"hpd", "ar"}
    assert Extractor(target).na_scalings["hpd"] == Scaling.of(block["na"]["hpd"])
    assert "calibration written" in capsys.readouterr().out

    # calibrate: the same fit from the saved outputs alone, no decoding (the run above decoded the
    # same raw confidences as the one saved, so two copies of the output give the same scalings)
    conf["calibration"] = {}
    (target / "slotwise.json").write_text(json.dumps(conf))
    assert main(["calibrate", "--model", str(target), str(out), str(out)]) == 0
    again = json.loads((target / "slotwise.json").read_text())
    assert again["note"] == "kept" and again["calibration"] == block
    # an output of another model is refused, and nothing is written
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**res, "model": "another-model"}))
    assert main(["calibrate", "--model", str(target), str(out), str(other)]) == 2
    assert "another-model" in capsys.readouterr().err
    assert json.loads((target / "slotwise.json").read_text()) == again


def test_wilson_interval_and_the_precision_curve():
    low, high = calibration.wilson(49, 50)  # textbook value: 0.895 - 0.996
    assert low == pytest.approx(0.8950, abs=1e-3) and high == pytest.approx(0.9965, abs=1e-3)
    assert calibration.wilson(0, 0) == (0.0, 1.0)
    confs = [0.95] * 10 + [0.6] * 10
    correct = [True] * 9 + [False] + [True] * 5 + [False] * 5
    curve = calibration.precision_curve(confs, correct, None, thresholds=(0.0, 0.9, 0.99))
    assert [row[:3] for row in curve] == [[0.0, 0.7, 20], [0.9, 0.9, 10]]  # none reaches 0.99
    assert curve[1][3] < 0.9 < curve[1][4]
    # thresholds apply to calibrated confidences: T > 1 pulls 0.95 below 0.9
    assert [row[2] for row in calibration.precision_curve(confs, correct, 3.0, thresholds=(0.9,))] == []


def test_fit_calibration_refuses_the_random_standin(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(
        json.dumps({"input": TEXTS[0], "category": "S", "target_scores": {"Brand": {"Diesel": 1}}})
    )
    assert main(["evaluate", "--data", str(data), "--fit-calibration", "--random-standin"]) == 2
    assert "needs a model directory" in capsys.readouterr().err
