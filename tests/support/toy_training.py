"""Toy training data for the engine's training tests: four shoe listings with their gold, a BPE
tokenizer trained on them, the data folders `train` reads, and ImplicitAVE rows."""

from __future__ import annotations

import json

from extraction.engine.train.copy_tokenizer import build_tokenizer

DOCS = [
    "Ellie Shoes Women's 8400, Red Patent, 14 M US",
    "Crocs Women's Jayna Ballet Flat, Nautical Navy, 4 M US",
    "Timberland Men's Radler Trail Camper Oxford, Lime, 15 M US",
    "Finn Comfort Women's Adana sandal in brown leather",
]


GOLD = [
    {"Brand": "Ellie Shoes", "Color": "Red Patent", "Size": "14 M US"},
    {"Brand": "Crocs", "Color": "Nautical Navy", "Size": None},  # Size not judged: no value, no loss
    {"Brand": "Timberland", "Color": "Lime", "Size": "15 M US"},
    {"Brand": "Finn Comfort", "Color": "brown", "Size": "n/a"},
]


NAMES = ["Brand", "Color", "Size"]


def write_toy_data(root):
    oa = root / "toy-oa"
    oa.mkdir()
    recs = [
        {"input": d, "category": "Shoes", "target_scores": {k: {v: 1} for k, v in g.items() if v is not None}}
        for d, g in zip(DOCS, GOLD, strict=True)
    ]
    (oa / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs * 3))
    (oa / "dev.jsonl").write_text(json.dumps(recs[0]) + "\n")
    wdc = root / "toy-wdc"
    wdc.mkdir()
    wrecs = [
        {
            "id": i,
            "cluster_id": i,
            "category": "Shoes",
            "input_title": d,
            "input_description": "Great shoes.",
            "target_scores": {
                k: ({"n/a": 1} if v in (None, "n/a") else {v: {"pid": [0], "score": 1}}) for k, v in g.items()
            },
        }
        for i, (d, g) in enumerate(zip(DOCS * 3, GOLD * 3, strict=True))
    ]
    (wdc / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in wrecs))
    return [str(oa), str(wdc)]


HEADER = "id\timages\tcategory\ttexts\tattribute_names\tattribute_values\n"


ROWS = [
    (
        "B1",
        "Dresses",
        "[Title] Jessica Howard Women's Cap Sleeve V Neck Beaded",
        "Sleeve Style",
        "Short Sleeve",
    ),
    ("B1", "Dresses", "[Title] Jessica Howard Women's Cap Sleeve V Neck Beaded", "Neckline", "V-Neck"),
    ("B2", "Dresses", '[Title] "Milk" Nursingwear Sleek Striped Maxi', "Neckline", "Scoop Neck"),
    ("B3", "Shirts & Tops", "[Title] Diesel Men's Exposure Tee", "Sleeve Style", "Long Sleeve"),
]


def toy_tokenizer():
    """A BPE tokenizer trained on the toy listings, their values and the prompt's words."""
    texts = DOCS + [v for g in GOLD for v in g.values() if v] + NAMES + ["Extract the value n/a JSON Product"]
    return build_tokenizer(texts, vocab_size=300)


def sampled_golds(sampler) -> list[dict]:
    """The gold of every example one epoch of a RowSampler packs (after augmentation)."""
    captured = []
    original = sampler._pack

    def spy(names, exs):
        captured.extend(ex.gold for ex in exs)
        return original(names, exs)

    sampler._pack = spy
    sampler.epoch_rows()
    return captured
