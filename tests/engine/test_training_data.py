"""What the recipe trains on: untagged OA-Mine attributes as "n/a", the distant sets as training
data only (never a dev split, never a dev title), compact rows, and data-set loss weights."""

from __future__ import annotations

import json

import pytest
import torch

from extraction.engine.layout import NA, value_ids
from extraction.engine.train.copy_tokenizer import build_tokenizer
from extraction.engine.train.corpus import Corpus, Example, load_corpus, to_example
from extraction.engine.train.losses import extractive_loss, weighted_mean
from extraction.engine.train.row_packing import IGNORE, RowConfig, RowSampler, collate

TITLES = [
    "Crocs Women's Jayna Ballet Flat, Nautical Navy, 4 M US",
    "Timberland Men's Radler Trail Camper Oxford, Lime",
    "Finn Comfort Women's Adana",
    "Diesel Men's Exposure High-Top Sneaker",
]
SCHEMA = ["Brand", "Gender", "Color", "Size", "Material", "Sport"]


def write(folder, records):
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def record(title: str, **values: str) -> dict:
    return {"input": title, "category": "Shoes", "target_scores": {k: {v: 1} for k, v in values.items()}}


@pytest.fixture
def data(tmp_path):
    """oa-mine and ae-110k folders (train + dev) and ave-extra with both distant sets."""
    oa = [
        record(TITLES[0], Brand="Crocs", Gender="Women's", Color="Nautical Navy", Size="4 M US"),
        record(TITLES[1], Brand="Timberland", Gender="Men's", Color="Lime"),
        record(TITLES[2], Brand="Finn Comfort", Gender="Women's"),
        record(TITLES[3], Brand="Diesel", Material="Leather", Sport="Running"),  # in dev below
    ]
    write(tmp_path / "ave" / "oa-mine", oa)
    (tmp_path / "ave" / "oa-mine" / "dev.jsonl").write_text(json.dumps(oa[3]) + "\n")
    write(
        tmp_path / "ave" / "ae-110k", [record(TITLES[1], Brand="Timberland"), record(TITLES[2], Brand="n/a")]
    )
    (tmp_path / "ave" / "ae-110k" / "dev.jsonl").write_text(
        json.dumps(record(TITLES[0], Brand="Crocs")) + "\n"
    )
    write(tmp_path / "ave-extra" / "ae-110k-distant", [record("Nike Air Max running shoe", Brand="Nike")])
    write(
        tmp_path / "ave-extra" / "amazon-distant",
        [record("Adidas Samba sneaker", Brand="Adidas"), record(TITLES[3], Brand="Diesel")],  # a dev title
    )
    return tmp_path


def test_untagged_oa_mine_attributes_train_as_na_and_ae_110k_ones_stay_unjudged(data):
    corpus = load_corpus([str(data / "ave")], data / "splits")
    (oa,) = [r for r in corpus.groups[("oa-mine", "Shoes")] if r["input"] == TITLES[2]]
    # the schema: the category's training records (Size's only record is a dev title of ae-110k)
    assert corpus.schemas[("oa-mine", "Shoes")] == ["Brand", "Gender", "Color"]
    assert oa["target_scores"] == {"Brand": {"Finn Comfort": 1}, "Gender": {"Women's": 1}, "Color": {NA: 1}}
    (ae,) = [r for r in corpus.groups[("ae-110k", "Shoes")] if r["input"] == TITLES[1]]
    assert set(ae["target_scores"]) == {"Brand"}  # AE-110k: an untagged attribute is unknown


def test_distant_sets_are_training_data_only_and_never_carry_a_dev_title(data):
    corpus = load_corpus([str(data / "ave"), str(data / "ave-extra")], data / "splits")
    assert corpus.dev["ae-110k-distant"] == [] and corpus.dev["amazon-distant"] == []
    assert not (data / "splits").exists() or not list((data / "splits").glob("*distant*"))
    trained = [r["input"] for records in corpus.groups.values() for r in records]
    assert "Adidas Samba sneaker" in trained and "Nike Air Max running shoe" in trained
    assert TITLES[3] not in trained  # oa-mine's dev title, also in amazon-distant
    assert TITLES[0] not in trained  # ae-110k's dev title, also in oa-mine's train


@pytest.fixture(scope="module")
def tokenizer():
    texts = TITLES + SCHEMA + ["Short Sleeve Long Sleeve Sleeveless Cap Sleeve Puff Sleeve Style"]
    texts += ["Crocs Women's Nautical Navy Extract the value n/a JSON Product"]
    return build_tokenizer(texts, vocab_size=400)


def examples() -> list[Example]:
    """Two OA-Mine-like products: Brand and Gender tagged, every other attribute inferred absent."""
    absent = dict.fromkeys(SCHEMA, NA)
    untagged = tuple(n for n in SCHEMA if n not in ("Brand", "Gender"))
    return [
        Example(TITLES[0], "Shoes", {**absent, "Brand": "Crocs", "Gender": "Women's"}, untagged=untagged),
        Example(
            TITLES[2], "Shoes", {**absent, "Brand": "Finn Comfort", "Gender": "Women's"}, untagged=untagged
        ),
    ]


def row_keys(tokenizer, row) -> set[str]:
    text = tokenizer.decode(row.input_ids)
    return {name for name in SCHEMA if f'"{name}"' in text}


@pytest.mark.parametrize("absent_keys", [1, 2])
def test_compact_rows_hold_the_valued_keys_and_a_few_absent_ones_with_na_labels(tokenizer, absent_keys):
    cfg = RowConfig(row_tokens=2048, p_hpd=1.0, absent_keys=absent_keys)
    for seed in range(5):
        sampler = RowSampler(load_corpus_stub(), tokenizer, cfg, None, seed)
        (row,) = sampler._pack(SCHEMA, examples())
        keys = row_keys(tokenizer, row)
        assert {"Brand", "Gender"} <= keys and 1 <= len(keys - {"Brand", "Gender"}) <= absent_keys
        # every key of each of the 2 documents carries its value's labels, "n/a" for the absent ones
        expected = sum(len(value_ids(tokenizer, ex.gold[k], 0)) for ex in examples() for k in keys)
        assert sum(label != IGNORE for label in row.labels) == expected


def test_compact_rows_keep_every_gold_na_and_drop_only_inferred_ones(tokenizer):
    said = Example(
        TITLES[1], "Shoes", {"Brand": "Timberland", "Color": NA, "Size": NA, "Sport": NA}
    )  # WDC-like
    cfg = RowConfig(row_tokens=2048, p_hpd=1.0, absent_keys=1)
    (row,) = RowSampler(load_corpus_stub(), tokenizer, cfg, None, 0)._pack(SCHEMA, [said])
    assert row_keys(tokenizer, row) == {"Brand", "Color", "Size", "Sport"}


def test_untagged_attributes_are_marked_as_inferred(data):
    corpus = load_corpus([str(data / "ave")], data / "splits")
    (oa,) = [r for r in corpus.groups[("oa-mine", "Shoes")] if r["input"] == TITLES[2]]
    assert to_example(oa, "oa-mine").untagged == ("Color",)
    (ae,) = [r for r in corpus.groups[("ae-110k", "Shoes")] if r["input"] == TITLES[2]]
    assert to_example(ae, "ae-110k").untagged == ()  # its "n/a" is in the gold


def test_without_compact_rows_every_judged_key_is_in_the_row(tokenizer):
    sampler = RowSampler(load_corpus_stub(), tokenizer, RowConfig(row_tokens=2048, p_hpd=1.0), None, 0)
    (row,) = sampler._pack(SCHEMA, examples())
    assert row_keys(tokenizer, row) == set(SCHEMA)


def load_corpus_stub():
    return Corpus(schemas={("oa-mine", "Shoes"): SCHEMA})


def test_data_set_weights_reach_every_labeled_token_and_weigh_the_losses(tokenizer):
    records = [record(TITLES[0], Brand="Crocs"), record(TITLES[2], Brand="Finn Comfort")]
    corpus = Corpus(
        groups={("people", "Shoes"): records[:1], ("distant", "Shoes"): records[1:]},
        schemas={("people", "Shoes"): ["Brand"], ("distant", "Shoes"): ["Brand"]},
        pools={"people": {}, "distant": {}},
    )
    cfg = RowConfig(row_tokens=2048, p_hpd=0.5, weights={"distant": 0.25})
    rows = sorted(RowSampler(corpus, tokenizer, cfg, None, 0).epoch_rows(), key=lambda r: r.weight)
    assert [r.weight for r in rows] == [0.25, 1.0]
    batch = collate(rows, tokenizer.pad_token_id or 0)
    labeled = [sum(label != IGNORE for label in r.labels) for r in rows]
    assert batch["weights"].tolist() == [0.25] * labeled[0] + [1.0] * labeled[1]
    losses = torch.tensor([1.0, 3.0])
    assert float(weighted_mean(losses, torch.tensor([0.25, 1.0]))) == pytest.approx((0.25 + 3.0) / 1.25)
    assert float(weighted_mean(losses, None)) == pytest.approx(2.0)
    logits = torch.randn(3, 5)
    labels = torch.tensor([1, 2, 3])
    choices = torch.ones(3, 5, dtype=torch.bool)
    choices[:, 4] = False
    weights = torch.tensor([0.0, 0.0, 1.0])
    only_last = extractive_loss(logits[2:], labels[2:], choices[2:])
    assert float(extractive_loss(logits, labels, choices, weights)) == pytest.approx(float(only_last))


SLEEVES = ["Short Sleeve", "Long Sleeve", "Sleeveless", "Cap Sleeve"]


def test_enumeration_values_train_under_the_trie_they_decode_under(tokenizer):
    from extraction.engine.decode.constraints import choice_rule
    from extraction.engine.layout import AttributeSpec, schema_prompt
    from extraction.engine.train.row_packing import build_row

    options = {"Sleeve Style": SLEEVES}
    implied = Example(
        "Jessica Howard Women's V Neck Beaded dress", "Dresses", {"Sleeve Style": "Long Sleeve"}
    )
    implied.options = options
    specs = [AttributeSpec("Sleeve Style", max_tokens=30)]
    schema = schema_prompt(tokenizer, specs)
    rule = choice_rule(tokenizer, SLEEVES, None)
    for hpd, ar in (([implied], []), ([], [implied])):
        row = build_row(tokenizer, specs, hpd, ar, with_choices=True)
        target = value_ids(tokenizer, "Long Sleeve", schema.terminator)
        state = rule.start(None, schema.terminator)
        expected = []
        for tok in target:
            expected.append(sorted(state.allowed().tolist()))
            state.push(tok)
        labeled = [t for t, label in enumerate(row.labels) if label != IGNORE and t in row.choices]
        got = [sorted(row.choices[t]) for t in labeled]
        assert got[-len(expected) :] == expected  # every value token: what the trie allows there
        assert len(expected[0]) >= 2  # a real choice among the options' first tokens
    # a value off the list gets no constrained loss (nothing the decoder could write)
    off = Example(implied.text, "Dresses", {"Sleeve Style": "Puff Sleeve"}, options=options)
    row = build_row(tokenizer, specs, [off], [], with_choices=True)
    assert not row.choices


def test_enumerations_list_their_values_in_the_prompt_where_the_model_was_trained_so(tokenizer):
    from extraction.engine.layout import AttributeSpec, prefix_text, with_values_listed

    exs = [
        Example(
            "Jessica Howard V Neck dress",
            "Dresses",
            {"Sleeve Style": "Long Sleeve"},
            options={"Sleeve Style": SLEEVES},
        )
    ]
    cfg = RowConfig(row_tokens=2048, p_hpd=1.0, absent_keys=2)  # compact rows keep the options too
    (row,) = RowSampler(load_corpus_stub(), tokenizer, cfg, None, 0)._pack(["Sleeve Style"], exs)
    listed = prefix_text(
        [with_values_listed(AttributeSpec("Sleeve Style", kind="enum", allowed_values=SLEEVES))]
    )
    assert "one of: Short Sleeve | Long Sleeve | Sleeveless | Cap Sleeve" in listed
    assert tokenizer.decode(tokenizer.encode(listed, add_special_tokens=False)) in tokenizer.decode(
        row.input_ids
    )
    plain = AttributeSpec("Brand", "the maker")
    assert with_values_listed(plain) == plain  # only enumerations change
