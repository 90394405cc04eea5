"""Deterministic train/dev splits of the public AVE data (../shared/data/ave).

- OA-Mine and AE-110k ship a ``dev.jsonl`` that is a subset of ``train.jsonl``: training uses
  train minus every record whose document text also appears in dev (no leakage through
  duplicate titles).
- WDC-PAVE ships only ``train.jsonl``: a seeded 20% dev split is drawn once and stored, in the
  original format, at ``models/slotwise-ave/splits/wdc-pave-dev.jsonl`` so that ``evaluate`` can
  read it like any other data file; training uses the rest.
- ImplicitAVE (a folder of domain folders, each with ``train.tsv`` and ``val.tsv``) trains on every
  domain's ``train.tsv`` minus every product whose title is also in a ``val.tsv``; the ``val.tsv``
  files are the dev data and never enter training. Its rows
  become records of the JSON-lines format (one per product id), so training reads them like the
  others.

Records stay raw ``dict``s (the JSON-lines format of the data README); the engine's data module
turns them into products.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from extraction.engine.data import load_options, load_tsv, options_for, product_from_record
from extraction.engine.normalized_gold import (
    DESCRIPTIONS,
    SUFFIX,
    closed_lists,
    instructions_path,
    options_path,
    paths,
    text_instructions,
)

DATASETS = ("oa-mine", "ae-110k", "wdc-pave")
# ../shared/data/ave-extra: distant-supervision labels, train only (no dev split is drawn from them:
# their labels are not checked by people, so they never score the model)
DISTANT = ("ae-110k-distant", "amazon-distant")
# Data sets whose annotators tagged every value the text holds: a schema attribute missing from a
# record is absent from its text, so it trains as "n/a" (shared/data/ave/README.md). AE-110k and the
# distant sets matched only some attributes (missing = unknown); WDC-PAVE lists every attribute.
ABSENT_WHEN_UNTAGGED = frozenset({"oa-mine"})
IMPLICIT = "implicitave"  # values mostly implied, not written: enumerations, never extractive spans
# WDC-PAVE's train_normalized.jsonl named as training data (normalized_split)
NORMALIZED = "wdc-pave-normalized"
DESCRIPTIONS_KEY = "descriptions"  # a record's attribute descriptions for the prompt (attribute -> text)
WDC_DEV_FRACTION = 0.2
WDC_DEV_SEED = 20260
SPLITS_DIR = Path(__file__).resolve().parents[2] / "models" / "slotwise-ave" / "splits"
# the public AVE data beside the checkout (../shared/data/ave), as the brief lays it out
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "ave"


def document_key(record: dict) -> str:
    """The document text of a raw record (title only, or title + description)."""
    if "input" in record:
        return record["input"]
    return f"{record.get('input_title', '')}\n{record.get('input_description', '')}"


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def wdc_dev_split(records: list[dict], fraction: float = WDC_DEV_FRACTION, seed: int = WDC_DEV_SEED):
    """Seeded split of WDC-PAVE by cluster (offers of one product never straddle the split)."""
    clusters = sorted({str(r.get("cluster_id", r.get("id", i))) for i, r in enumerate(records)})
    rng = random.Random(seed)
    rng.shuffle(clusters)
    dev_clusters = set(clusters[: round(len(clusters) * fraction)])
    train, dev = [], []
    for i, record in enumerate(records):
        key = str(record.get("cluster_id", record.get("id", i)))
        (dev if key in dev_clusters else train).append(record)
    return train, dev


@dataclass
class Split:
    """Train and dev records of one data set."""

    name: str
    train: list[dict] = field(default_factory=list)
    dev: list[dict] = field(default_factory=list)
    dev_path: Path | None = None


def is_implicit_root(path: Path) -> bool:
    """An ImplicitAVE folder: domain folders holding train.tsv."""
    return any(Path(path).glob("*/train.tsv"))


OPTIONS = "options"  # a record's closed value lists (attribute -> values): decoded as enumerations


def implicit_records(path: Path) -> list[dict]:
    """An ImplicitAVE .tsv as JSON-lines records: {input, category, target_scores {attr: {value: 1}},
    options}, options being its domain's closed lists (the file evaluate decodes the domain with)."""
    products = load_tsv(path)
    chosen = options_for(path, products)
    options = load_options(chosen) if chosen is not None else {}
    return [
        {
            "input": p.text,
            "category": p.category,
            "target_scores": {a: dict.fromkeys(f, 1) for a, f in p.gold.items()},
            OPTIONS: options,
        }
        for p in products
    ]


def normalized_split(path: Path) -> Split:
    """WDC-PAVE's normalized gold as a training set of its own: the products of the clusters
    wdc_dev_split keeps for training, with the attributes `evaluate --gold normalized` decodes by
    the data set's instructions. Those of a closed list (Product Type, Color, Interface, ...) carry
    their category's lists as OPTIONS, so they train as enumerations under their trie with the
    values listed in the prompt; those an instruction normalizes as text (Part Number without its
    hyphens, Brand in capitals) carry the instruction as their description (DESCRIPTIONS_KEY), so
    the prompt line that asks for the normalized value differs from the extracted attribute's. The
    numbers (lengths in centimetres) are not trained: the number rule converts what the text says."""
    extracted_path, normalized_path = paths(path)
    train, _dev = wdc_dev_split(read_jsonl(extracted_path))
    ids = {r.get("id") for r in train}
    records = [r for r in read_jsonl(normalized_path) if r.get("id") in ids]
    guide = extracted_path.parent / DESCRIPTIONS
    lists = closed_lists(guide, [product_from_record(r) for r in records])
    told = text_instructions(guide)
    out = []
    for record in records:
        category = str(record.get("category", ""))
        own, said = lists.get(category, {}), told.get(category, {})
        scores = {a: v for a, v in record.get("target_scores", {}).items() if a in own or a in said}
        if scores:
            described = {a: said[a] for a in scores if a in said}
            out.append({**record, "target_scores": scores, OPTIONS: own, DESCRIPTIONS_KEY: described})
    return Split(NORMALIZED, out, [], None)


def load_split(data_dir: Path, splits_dir: Path = SPLITS_DIR, write: bool = True) -> Split:
    """Split one data set folder (oa-mine, ae-110k, wdc-pave or ImplicitAVE layout) into train and
    dev; WDC-PAVE's train_normalized.jsonl, named as a file, trains as normalized_split."""
    data_dir = Path(data_dir)
    if data_dir.is_file() and data_dir.stem.endswith(SUFFIX):
        return normalized_split(data_dir)
    if is_implicit_root(data_dir):
        domains = sorted(p.parent for p in data_dir.glob("*/train.tsv"))
        train = [r for d in domains for r in implicit_records(d / "train.tsv")]
        dev = [r for d in domains if (d / "val.tsv").exists() for r in implicit_records(d / "val.tsv")]
        dev_docs = {document_key(r) for r in dev}  # 646 val titles recur in train under other ids
        return Split(IMPLICIT, [r for r in train if document_key(r) not in dev_docs], dev, None)
    records = read_jsonl(data_dir / "train.jsonl")
    if data_dir.name in DISTANT:
        return Split(data_dir.name, records, [], None)
    shipped_dev = data_dir / "dev.jsonl"
    if shipped_dev.exists():
        dev = read_jsonl(shipped_dev)
        dev_docs = {document_key(r) for r in dev}
        train = [r for r in records if document_key(r) not in dev_docs]
        return Split(data_dir.name, train, dev, shipped_dev)
    train, dev = wdc_dev_split(records)
    dev_path = Path(splits_dir) / f"{data_dir.name}-dev.jsonl"
    if write and not dev_path.exists():
        write_jsonl(dev_path, dev)
    normalized = data_dir / f"train{SUFFIX}.jsonl"
    normalized_dev = dev_path.with_name(f"{dev_path.stem}{SUFFIX}.jsonl")
    if write and normalized.exists() and not normalized_dev.exists():
        # the same dev products with their normalized gold, for evaluate --gold normalized
        ids = {r.get("id") for r in dev}
        write_jsonl(normalized_dev, [r for r in read_jsonl(normalized) if r.get("id") in ids])
    guide = data_dir / DESCRIPTIONS
    lists, told = options_path(normalized_dev), instructions_path(normalized_dev)
    if write and normalized.exists() and guide.exists() and not (lists.exists() and told.exists()):
        # the closed lists (from the training split only) and the text instructions evaluate
        # --gold normalized decodes with
        ids = {r.get("id") for r in train}
        products = [product_from_record(r) for r in read_jsonl(normalized) if r.get("id") in ids]
        for target, content in ((lists, closed_lists(guide, products)), (told, text_instructions(guide))):
            target.write_text(json.dumps(content, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return Split(data_dir.name, train, dev, dev_path)


def resolve_data_dirs(paths: list[str]) -> list[Path]:
    """``--data`` accepts the AVE root (its three JSON-lines sets), the ave-extra root (its distant
    sets), individual data set folders, the ImplicitAVE folder and WDC-PAVE's train_normalized.jsonl
    (each of the last two named on its own: the AVE root alone trains as before)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file() and path.stem.endswith(SUFFIX):
            out.append(path)
        elif (path / "train.jsonl").exists() or is_implicit_root(path):
            out.append(path)
        else:
            names = DATASETS + DISTANT
            out.extend(path / name for name in names if (path / name / "train.jsonl").exists())
    if not out:
        raise FileNotFoundError(f"no train.jsonl under {paths}")
    return out
