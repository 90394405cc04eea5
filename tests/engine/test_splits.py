"""WDC-PAVE's seeded dev split is written with its normalized gold beside it, for the same products."""

import json

from extraction.engine.splits import DESCRIPTIONS_KEY, NORMALIZED, OPTIONS, load_split, resolve_data_dirs


def test_the_dev_split_gets_the_normalized_gold_of_its_own_products(tmp_path):
    wdc = tmp_path / "wdc-pave"
    wdc.mkdir()
    records = [
        {"id": i, "cluster_id": i, "category": "Shoes", "input_title": f"shoe {i}", "target_scores": {}}
        for i in range(20)
    ]
    normalized = [{**r, "input_title": f"normalized {r['id']}"} for r in reversed(records)]
    (wdc / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (wdc / "train_normalized.jsonl").write_text("".join(json.dumps(r) + "\n" for r in normalized))
    split = load_split(wdc, tmp_path / "splits")
    written = [json.loads(line) for line in (tmp_path / "splits" / "wdc-pave-dev_normalized.jsonl").open()]
    assert sorted(r["id"] for r in written) == sorted(r["id"] for r in split.dev) and len(split.dev) == 4
    assert all(r["input_title"] == f"normalized {r['id']}" for r in written)
    assert not {r["id"] for r in split.train} & {r["id"] for r in written}


GUIDE = (
    "Category,Attribute,Normalization_instruction\n"
    'Jewelry,Product Type,"Give the Product Type as EXACTLY ONE of the following:\n- Rings/Bands\n- Earrings"\n'
    "Jewelry,Brand,Return the Brand in Uppercase Format\n"
)


def ring(i, gold: dict[str, str]) -> dict:
    """A WDC-PAVE record of product i (its own cluster) with this gold ("n/a" = absent)."""
    scores = {a: {v: {"pid": [0], "score": 1}} if v != "n/a" else {"n/a": 1} for a, v in gold.items()}
    return {
        "id": i,
        "cluster_id": i,
        "category": "Jewelry",
        "input_title": f"ring {i}",
        "target_scores": scores,
    }


def write_lines(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_closed_lists_written_with_the_split_hold_training_values_only(tmp_path):
    wdc = tmp_path / "wdc-pave"
    wdc.mkdir()
    write_lines(wdc / "train.jsonl", [ring(i, {"Product Type": "Rings/Bands"}) for i in range(20)])
    split = load_split(wdc, tmp_path / "splits", write=False)  # which products the seeded split keeps
    dev_ids = {r["id"] for r in split.dev}
    train_id = next(r["id"] for r in split.train)
    values = [f"Dev only {i}" if i in dev_ids else "Rings/Bands" for i in range(20)]
    values[train_id] = "Anklets"  # a training value the instruction does not list
    write_lines(wdc / "train_normalized.jsonl", [ring(i, {"Product Type": v}) for i, v in enumerate(values)])
    (wdc / "attribute_descriptions.csv").write_text(GUIDE)
    load_split(wdc, tmp_path / "splits")
    lists = json.loads((tmp_path / "splits" / "wdc-pave-dev_normalized_options.json").read_text())
    assert lists == {"Jewelry": {"Product Type": ["Rings/Bands", "Earrings", "Anklets"]}}  # no dev value


def test_the_normalized_file_trains_its_instructed_attributes_of_training_clusters_only(tmp_path):
    wdc = tmp_path / "wdc-pave"
    wdc.mkdir()
    extracted = {"Product Type": "ring", "Brand": "Acme", "Width": "2 in"}
    write_lines(wdc / "train.jsonl", [ring(i, extracted) for i in range(20)])
    normalized = [
        ring(i, {"Product Type": "Rings/Bands", "Brand": "ACME", "Width": "5.1"}) for i in range(20)
    ]
    write_lines(wdc / "train_normalized.jsonl", normalized)
    (wdc / "attribute_descriptions.csv").write_text(GUIDE)
    named = wdc / "train_normalized.jsonl"
    assert resolve_data_dirs([str(named), str(tmp_path)]) == [named, wdc]  # the file, then the AVE root's set
    split = load_split(named, tmp_path / "splits")
    kept = load_split(wdc, tmp_path / "splits", write=False)
    assert split.name == NORMALIZED and split.dev == []
    assert {r["id"] for r in split.train} == {r["id"] for r in kept.train}  # never a dev cluster
    for r in split.train:  # the closed list and the instructed text; not the number (the rule converts)
        assert r["target_scores"] == {
            "Product Type": {"Rings/Bands": {"pid": [0], "score": 1}},
            "Brand": {"ACME": {"pid": [0], "score": 1}},
        }
        assert r[OPTIONS] == {"Product Type": ["Rings/Bands", "Earrings"]}
        assert r[DESCRIPTIONS_KEY] == {"Brand": "Return the Brand in Uppercase Format"}
