"""WDC-PAVE's seeded dev split is written with its normalized gold beside it, for the same products."""

import json

from extraction.engine.splits import load_split


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
