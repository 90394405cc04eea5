"""WDC-PAVE's train_normalized.jsonl in the training mix: its closed-list values train as
enumerations, are never copy-augmented out of their list, and never count against extractive
decoding."""

from __future__ import annotations

import json

import pytest

from extraction.engine.splits import NORMALIZED
from extraction.engine.train import augment as aug
from extraction.engine.train.corpus import load_corpus, verbatim_share
from extraction.engine.train.row_packing import RowConfig, RowSampler
from tests.support.toy_training import sampled_golds, toy_tokenizer

COLOURS = ["Black", "White", "Assorted/Others"]
UPPERCASE = "Return the Brand in Uppercase Format"


@pytest.fixture(scope="module")
def tokenizer():
    return toy_tokenizer()


def write_wdc(root):
    wdc = root / "wdc-pave"
    wdc.mkdir()

    def record(i, colour):
        scores = {"Color(s)": {colour: {"pid": [0], "score": 1}}, "Brand": {"Acme": {"pid": [0], "score": 1}}}
        title = f"Acme Black pen {i}"
        return {
            "id": i,
            "cluster_id": i,
            "category": "Office Products",
            "input_title": title,
            "target_scores": scores,
        }

    (wdc / "train.jsonl").write_text("".join(json.dumps(record(i, "Black")) + "\n" for i in range(20)))
    # even products: a listed value the title writes (copy augmentation would swap it); odd: one it
    # does not write
    colours = ["Black" if i % 2 == 0 else "Assorted/Others" for i in range(20)]
    normalized = "".join(json.dumps(record(i, c)) + "\n" for i, c in enumerate(colours))
    (wdc / "train_normalized.jsonl").write_text(normalized)
    listed = "\n".join(f"-{c}" for c in COLOURS)
    (wdc / "attribute_descriptions.csv").write_text(
        f'Category,Attribute,Normalization_instruction\nOffice Products,Color(s),"ONLY ONE of the following options:\n{listed}"\n'
        f"Office Products,Brand,{UPPERCASE}\n"
    )
    return wdc


def test_closed_list_values_stay_in_their_list_and_out_of_the_extractive_share(tmp_path, tokenizer):
    wdc = write_wdc(tmp_path)
    named = str(wdc / "train_normalized.jsonl")
    corpus = load_corpus([named], tmp_path / "splits")
    assert [k for k in corpus.groups] == [(NORMALIZED, "Office Products")]
    always = aug.AugmentConfig(p_product=1.0, p_attribute=1.0, p_mutate=1.0)
    sampler = RowSampler(corpus, tokenizer, RowConfig(row_tokens=300), always, 0)
    golds = sampled_golds(sampler)
    assert {g["Color(s)"] for g in golds} == {"Black", "Assorted/Others"}  # never swapped or mutated
    assert {g["Brand"] for g in golds} == {"Acme"}
    # "Assorted/Others" is not in any title: it must not pull the extractive share below its bar
    both = load_corpus([str(wdc), named], tmp_path / "splits")
    assert verbatim_share(both) == verbatim_share(load_corpus([str(wdc)], tmp_path / "splits")) == 1.0


def test_an_instructed_attribute_reads_its_instruction_in_the_rows_prompt(tmp_path, tokenizer):
    wdc = write_wdc(tmp_path)
    corpus = load_corpus([str(wdc / "train_normalized.jsonl")], tmp_path / "splits")
    rows = RowSampler(corpus, tokenizer, RowConfig(row_tokens=300), None, 0).epoch_rows()
    prompts = [tokenizer.decode(row.input_ids) for row in rows]
    assert all(f"- Brand: {UPPERCASE}" in " ".join(p.split()) for p in prompts)
    extracted = load_corpus([str(wdc)], tmp_path / "splits")  # the extracted set: a bare name
    bare = [
        tokenizer.decode(row.input_ids)
        for row in RowSampler(extracted, tokenizer, RowConfig(), None, 0).epoch_rows()
    ]
    assert all("Uppercase" not in p for p in bare)
