"""ImplicitAVE in the training mix: every domain's train.tsv trains, its val.tsv never does, implied
values are neither copy-augmented nor counted against extractive decoding."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from extraction.engine.splits import IMPLICIT, load_split, resolve_data_dirs
from extraction.engine.train import augment as aug
from extraction.engine.train.corpus import load_corpus, verbatim_share
from extraction.engine.train.row_packing import RowConfig, RowSampler
from tests.support.toy_training import HEADER, ROWS, sampled_golds, toy_tokenizer, write_toy_data


@pytest.fixture(scope="module")
def tokenizer():
    return toy_tokenizer()


TRAIN = [row for row in ROWS if row[0] != "B2"]  # evaluate's rows: B1 (two attributes) and B3
VAL = [
    ("B9", "Dresses", "[Title] Held-out Maxi Dress", "Sleeve Style", "Sleeveless"),
    (
        "B7",
        "Shirts & Tops",
        "[Title] Diesel Men's Exposure Tee",
        "Neckline",
        "Crew",
    ),  # B3's title, another id
]


def write_implicit(root):
    for domain, rows in (("Clothing", TRAIN), ("Food", [])):
        folder = root / "implicitave" / domain
        folder.mkdir(parents=True)
        lines = "".join(f"{i}\t{i}.jpg\t{c}\t{t}\t{a}\t{v}\n" for i, c, t, a, v in rows)
        (folder / "train.tsv").write_text(HEADER + lines)
    val = "".join(f"{i}\t{i}.jpg\t{c}\t{t}\t{a}\t{v}\n" for i, c, t, a, v in VAL)
    (root / "implicitave" / "Clothing" / "val.tsv").write_text(HEADER + val)
    return root / "implicitave"


def test_the_ave_root_alone_trains_as_before_and_implicitave_joins_when_named(tmp_path):
    toy = write_toy_data(tmp_path)
    ave = tmp_path / "ave"  # the shared layout: data set folders and the ImplicitAVE folder side by side
    (ave / "oa-mine").mkdir(parents=True)
    shutil.copy(Path(toy[0]) / "train.jsonl", ave / "oa-mine" / "train.jsonl")
    implicit = write_implicit(ave)
    assert resolve_data_dirs([str(ave)]) == [ave / "oa-mine"]
    assert resolve_data_dirs([str(ave), str(implicit)]) == [ave / "oa-mine", implicit]
    split = load_split(implicit, tmp_path / "splits")
    assert split.name == IMPLICIT
    assert [(r["input"], r["category"], r["target_scores"]) for r in split.train] == [
        (
            "Jessica Howard Women's Cap Sleeve V Neck Beaded",
            "Dresses",
            {"Sleeve Style": {"Short Sleeve": 1}, "Neckline": {"V-Neck": 1}},
        ),
    ]  # B3 left out: its title is in val
    assert [r["input"] for r in split.dev] == ["Held-out Maxi Dress", "Diesel Men's Exposure Tee"]
    corpus = load_corpus([*toy, str(implicit)], tmp_path / "splits")
    assert corpus.schemas[(IMPLICIT, "Dresses")] == ["Sleeve Style", "Neckline"]
    trained = [r["input"] for k, rs in corpus.groups.items() if k[0] == IMPLICIT for r in rs]
    assert trained == ["Jessica Howard Women's Cap Sleeve V Neck Beaded"]
    # implied values are not in their text: they must not pull the extractive share below its bar
    assert verbatim_share(corpus) == verbatim_share(load_corpus(toy, tmp_path / "splits"))


def test_implied_values_are_never_copy_augmented(tmp_path, tokenizer):  # noqa: F811
    implicit = write_implicit(tmp_path)
    corpus = load_corpus([str(implicit)], tmp_path / "splits")
    # every augmentation on, always: a record of another data set would change
    always = aug.AugmentConfig(p_product=1.0, p_attribute=1.0, p_mutate=1.0)
    record = corpus.groups[(IMPLICIT, "Dresses")][0]
    assert aug.augment_record({**record, "input": "Short Sleeve dress"}, {}, random.Random(0), always) != {
        **record,
        "input": "Short Sleeve dress",
    }
    sampler = RowSampler(corpus, tokenizer, RowConfig(row_tokens=300), always, 0)
    golds = {tuple(sorted(ex_gold.items())) for ex_gold in sampled_golds(sampler)}
    assert golds <= {
        (("Neckline", "V-Neck"), ("Sleeve Style", "Short Sleeve")),
        (("Sleeve Style", "Long Sleeve"),),
    }


def test_the_majority_floor_is_counted_on_train_and_scored_on_the_products(tmp_path):
    from extraction.engine import data

    folder = tmp_path / "Clothing"
    folder.mkdir()
    train = [("T1", "Neckline", "V-Neck"), ("T2", "Neckline", "V-Neck"), ("T3", "Neckline", "Crew")]
    train += [("T4", "Sleeve Style", "Sleeveless")]
    val = [("V1", "Neckline", "Crew"), ("V2", "Neckline", "V-Neck"), ("V3", "Sleeve Style", "Sleeveless")]
    for name, rows in (("train.tsv", train), ("val.tsv", val)):
        lines = "".join(f"{i}\t{i}.jpg\tDresses\t[Title] dress {i}\t{a}\t{v}\n" for i, a, v in rows)
        (folder / name).write_text(HEADER + lines)
    products = data.load_tsv(folder / "val.tsv")
    floor = data.majority_floor(folder / "val.tsv", products)
    assert (floor["pairs"], floor["accuracy"]) == (3, 2 / 3)  # V-Neck right, Crew wrong, Sleeveless right
    assert data.majority_floor(folder / "train.tsv", products) is None  # never scored on its own counts
