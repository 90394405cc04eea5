"""The AVE metric against hand-computed cases (shared/data/ave/README.md)."""

from __future__ import annotations

import pytest

from extraction.engine.metric import Counts, Report, evaluate, outcome


@pytest.mark.parametrize(
    ("pred", "gold", "kind"),
    [
        ("Diesel", ["Diesel"], "VC"),
        ("  Diesel ", ["Diesel"], "VC"),  # trimmed
        ("Men's", ["Men", "Men's"], "VC"),  # any accepted form
        ("diesel", ["Diesel"], "VW"),  # exact match, case matters
        ("Diesel", ["n/a"], "NV"),
        ("n/a", ["Diesel"], "VN"),
        (None, ["Diesel"], "VN"),
        ("", ["Diesel"], "VN"),
        ("n/a", ["n/a"], "NN"),
        ("N/A", ["n/a"], "NN"),
    ],
)
def test_it_classifies_each_pair(pred, gold, kind):
    assert outcome(pred, gold) == kind


def test_it_computes_micro_precision_recall_f1_by_hand():
    pairs = [
        ("Shoes", "Brand", "Diesel", ["Diesel"]),  # VC
        ("Shoes", "Brand", "Nike", ["Adidas"]),  # VW
        ("Shoes", "Color", "Red", ["n/a"]),  # NV
        ("Coffee", "Brand", "n/a", ["Lavazza"]),  # VN
        ("Coffee", "Roast", "n/a", ["n/a"]),  # NN
        ("Coffee", "Roast", "Dark", ["Dark", "dark roast"]),  # VC
    ]
    r = evaluate(pairs)
    m = r.micro
    assert (m.VC, m.VW, m.NV, m.VN, m.NN) == (2, 1, 1, 1, 1)
    assert m.precision == pytest.approx(2 / 4)  # VC / (NV + VC + VW)
    assert m.recall == pytest.approx(2 / 4)  # VC / (VN + VC + VW)
    assert m.f1 == pytest.approx(0.5)
    shoes = r.per_category["Shoes"]
    assert shoes.precision == pytest.approx(1 / 3) and shoes.recall == pytest.approx(1 / 2)
    assert shoes.f1 == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))
    assert r.per_attribute["Roast"].f1 == pytest.approx(1.0)
    assert r.per_attribute["Brand"].to_dict()["VN"] == 1
    assert set(r.to_dict()) == {"micro", "per_attribute", "per_category"}


def test_empty_counts_are_zero_not_errors():
    assert (Counts().precision, Counts().recall, Counts().f1) == (0.0, 0.0, 0.0)
    assert Report().to_dict()["micro"]["f1"] == 0.0


def test_it_counts_absent_and_unjudged_attributes_by_hand():
    pairs = [
        ("Shoes", "Color", "Red", ["n/a"]),  # NV
        ("Shoes", "Color", "n/a", ["n/a"]),  # NN
        ("Shoes", "Size", None, ["n/a"]),  # NN
        ("Shoes", "Size", "n/a", ["10"]),  # VN
        ("Shoes", "Brand", "Diesel", ["Diesel"]),  # VC
        ("Shoes", "Gender", "Men", None),  # unjudged, valued
        ("Shoes", "Gender", "n/a", None),  # unjudged, n/a
        ("Coffee", "Roast", "", None),  # unjudged, n/a (empty)
    ]
    r = evaluate(pairs)
    m = r.micro
    assert (m.VC, m.VW, m.NV, m.VN, m.NN) == (1, 0, 1, 1, 2)
    assert m.gold_na == 3
    assert m.na_accuracy == pytest.approx(2 / 3)  # NN / (NN + NV)
    assert m.na_precision == pytest.approx(2 / 3)  # NN / (NN + VN)
    assert (m.unjudged, m.unjudged_valued) == (3, 1)
    assert m.unjudged_value_share == pytest.approx(1 / 3)
    # unjudged pairs stay out of P / R / F1
    assert m.pairs == 5 and m.precision == pytest.approx(1 / 2) and m.recall == pytest.approx(1 / 2)
    assert r.per_attribute["Gender"].unjudged == 2 and r.per_attribute["Gender"].pairs == 0
    assert r.per_category["Coffee"].unjudged_value_share == 0.0
    assert r.per_attribute["Color"].na_accuracy == pytest.approx(1 / 2)
    d = r.to_dict()["micro"]
    assert d["NV"] == 1 and d["gold_na"] == 3 and d["unjudged_valued"] == 1


def test_shown_precision_counts_every_value_shown_and_unjudged_ones_as_wrong():
    pairs = [
        ("Shoes", "Brand", "Diesel", ["Diesel"]),  # VC
        ("Shoes", "Color", "Exposure", ["Black"]),  # VW
        ("Shoes", "Size", "n/a", ["10"]),  # VN
        ("Shoes", "Sport", "Sneaker", None),  # unjudged, valued: shown and (OA-Mine) wrong
        ("Shoes", "Gender", "n/a", None),  # unjudged, n/a: not shown
    ]
    m = evaluate(pairs).micro
    assert m.precision == pytest.approx(1 / 2)  # the standard metric does not see the Sport value
    assert m.shown_precision == pytest.approx(1 / 3)
    recall = 1 / 3
    assert m.f1_unjudged_absent == pytest.approx(2 * (1 / 3) * recall / (1 / 3 + recall))
    same = evaluate([*pairs[:3], ("Shoes", "Sport", "Sneaker", ["n/a"]), ("Shoes", "Gender", "n/a", ["n/a"])])
    assert m.f1_unjudged_absent == pytest.approx(same.micro.f1)  # unjudged counted as gold n/a
    assert evaluate(pairs).to_dict()["micro"]["shown_precision"] == pytest.approx(1 / 3)


def test_na_figures_are_none_without_their_pairs():
    m = evaluate([("Shoes", "Brand", "Diesel", ["Diesel"])]).micro
    assert m.gold_na == 0 and m.na_accuracy is None and m.na_precision is None
    assert m.unjudged == 0 and m.unjudged_value_share is None
