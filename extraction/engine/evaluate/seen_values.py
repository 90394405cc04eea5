"""Values a model saw in training against values it never saw: does it read the document, or
recall its training data? (A from-scratch model got 27% of the OA-Mine dev values it never saw.)

A judged dev pair whose gold has a value is *seen* when one of its gold forms is, after trimming,
a gold form of the same attribute somewhere in the data set's training split (splits.load_split:
train minus every dev document, or WDC-PAVE's seeded rest), else *unseen*. Accuracy of a kind =
pairs predicted with one of their gold forms (VC) / pairs of that kind. Pure Python (no torch).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

from extraction.engine.metric import is_na, outcome
from extraction.engine.splits import DATASETS, DEFAULT_DATA, SPLITS_DIR, load_split


def training_dir_for(data_path: str | Path, ave_root: Path = DEFAULT_DATA) -> Path | None:
    """The data set folder whose training split belongs to a dev file, or None if unknown:
    ``<set>/dev.jsonl`` beside its ``train.jsonl``, or the stored ``<set>-dev.jsonl`` split."""
    path = Path(data_path)
    if path.name == "dev.jsonl" and (path.parent / "train.jsonl").exists():
        return path.parent
    name = path.name.removesuffix("-dev.jsonl")
    if name in DATASETS and path.parent.resolve() == SPLITS_DIR.resolve():
        folder = Path(ave_root) / name
        return folder if (folder / "train.jsonl").exists() else None
    return None


def training_values(data_dir: Path) -> dict[str, set[str]]:
    """attribute -> every gold form (trimmed, not n/a) of the training split of a data set folder."""
    known: dict[str, set[str]] = {}
    for record in load_split(data_dir, write=False).train:
        for attr, forms in record.get("target_scores", {}).items():
            known.setdefault(attr, set()).update(str(f).strip() for f in forms if not is_na(str(f)))
    return known


@dataclass
class SeenSplit:
    seen: int = 0
    seen_right: int = 0
    unseen: int = 0
    unseen_right: int = 0

    @classmethod
    def summed(cls, parts: Iterable[dict]) -> SeenSplit:
        """Several runs' splits (to_dict() or --json entries) added field by field."""
        parts = list(parts)
        return cls(**{f.name: sum(p[f.name] for p in parts) for f in fields(cls)})

    @property
    def seen_accuracy(self) -> float | None:
        return self.seen_right / self.seen if self.seen else None

    @property
    def unseen_accuracy(self) -> float | None:
        return self.unseen_right / self.unseen if self.unseen else None

    def to_dict(self) -> dict:
        return {
            "seen": self.seen,
            "seen_right": self.seen_right,
            "seen_accuracy": self.seen_accuracy,
            "unseen": self.unseen,
            "unseen_right": self.unseen_right,
            "unseen_accuracy": self.unseen_accuracy,
        }


def seen_split(products, predictions: list[dict], known: dict[str, set[str]]) -> SeenSplit:
    """products: data.Product list; predictions: per product, attribute -> text (or None)."""
    out = SeenSplit()
    for product, pred in zip(products, predictions, strict=True):
        for attr, gold in product.gold.items():
            forms = {g.strip() for g in gold if not is_na(g)}
            if not forms:
                continue
            right = outcome(pred.get(attr), gold) == "VC"
            if forms & known.get(attr, set()):
                out.seen += 1
                out.seen_right += right
            else:
                out.unseen += 1
                out.unseen_right += right
    return out
