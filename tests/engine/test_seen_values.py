"""seen_values: a dev value counts as seen only if the training split (dev documents removed)
holds it for the same attribute."""

import json

from extraction.engine import data as ave
from extraction.engine.evaluate import seen_values
from extraction.engine.splits import SPLITS_DIR


def record(i, text, **gold):
    return {
        "id": str(i),
        "category": "coffee",
        "input": text,
        "target_scores": {a: {v: 1} for a, v in gold.items()},
    }


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_seen_and_unseen_values_are_told_apart_by_the_training_split(tmp_path):
    folder = tmp_path / "oa-mine"
    folder.mkdir()
    dev = [
        record(1, "Lavazza Espresso 1 lb", Brand="Lavazza", Size="1 lb"),
        record(2, "Illy Classico 8.8 oz", Brand="Illy", Size="8.8 oz"),
    ]
    train = dev + [  # the dev documents themselves are in train.jsonl, as OA-Mine ships it
        record(3, "Lavazza Gold 2 lb", Brand="Lavazza", Size="2 lb"),
        record(4, "Kona Blend 8.8 oz", Brand="Kona", Flavor="8.8 oz"),  # same text, other attribute
    ]
    write(folder / "train.jsonl", train)
    write(folder / "dev.jsonl", dev)

    assert seen_values.training_dir_for(folder / "dev.jsonl") == folder
    known = seen_values.training_values(folder)
    assert "Illy" not in known["Brand"]  # only in a dev document: not seen
    products = ave.load_jsonl(folder / "dev.jsonl")
    preds = [{"Brand": "Lavazza", "Size": "lb"}, {"Brand": "Illy", "Size": "8.8 oz"}]

    split = seen_values.seen_split(products, preds, known)

    # seen: Lavazza (right); unseen: 1 lb (wrong), Illy (right), 8.8 oz as a Size (right)
    assert (split.seen, split.seen_right) == (1, 1)
    assert (split.unseen, split.unseen_right) == (3, 2)
    assert split.unseen_accuracy == 2 / 3


def test_the_stored_wdc_split_maps_to_its_data_set_folder(tmp_path):
    (tmp_path / "wdc-pave").mkdir()
    (tmp_path / "wdc-pave" / "train.jsonl").write_text("")
    assert seen_values.training_dir_for(SPLITS_DIR / "wdc-pave-dev.jsonl", tmp_path) == tmp_path / "wdc-pave"
    assert seen_values.training_dir_for(tmp_path / "other.jsonl", tmp_path) is None
