"""The AVE metric of shared/data/ave/README.md, the one implementation the CLI, the web app and
the tests share. Pure Python: importing it must not import torch (the web process imports it).

Per (product, attribute) pair with gold, compare the prediction with the gold forms (exact string
match after trimming; any accepted form counts):
    VC value predicted, one of the gold forms     VW value predicted, gold has other values
    NV value predicted, gold is n/a               VN n/a predicted, gold has a value
    NN both n/a (not counted)
precision = VC / (NV + VC + VW), recall = VC / (VN + VC + VW), F1 = harmonic mean.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

NA = "n/a"
OUTCOMES = ("VC", "VW", "NV", "VN", "NN")


def is_na(value: str | None) -> bool:
    """None, empty and 'n/a' (any case) all mean 'no value'."""
    return value is None or value.strip() == "" or value.strip().lower() == NA


def outcome(pred: str | None, gold: Iterable[str]) -> str:
    """One of VC, VW, NV, VN, NN for one (product, attribute) pair."""
    forms = {g.strip() for g in gold if not is_na(g)}
    if is_na(pred):
        return "NN" if not forms else "VN"
    if not forms:
        return "NV"
    return "VC" if pred.strip() in forms else "VW"


@dataclass
class Counts:
    VC: int = 0
    VW: int = 0
    NV: int = 0
    VN: int = 0
    NN: int = 0

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)

    @property
    def precision(self) -> float:
        d = self.NV + self.VC + self.VW
        return self.VC / d if d else 0.0

    @property
    def recall(self) -> float:
        d = self.VN + self.VC + self.VW
        return self.VC / d if d else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def pairs(self) -> int:
        return self.VC + self.VW + self.NV + self.VN + self.NN

    def to_dict(self) -> dict:
        return {
            **{k: getattr(self, k) for k in OUTCOMES},
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


@dataclass
class Report:
    micro: Counts = field(default_factory=Counts)
    per_attribute: dict[str, Counts] = field(default_factory=dict)
    per_category: dict[str, Counts] = field(default_factory=dict)

    def add(self, category: str, attribute: str, pred: str | None, gold: Iterable[str]) -> str:
        kind = outcome(pred, gold)
        self.micro.add(kind)
        self.per_attribute.setdefault(attribute, Counts()).add(kind)
        self.per_category.setdefault(category, Counts()).add(kind)
        return kind

    def to_dict(self) -> dict:
        return {
            "micro": self.micro.to_dict(),
            "per_attribute": {k: v.to_dict() for k, v in sorted(self.per_attribute.items())},
            "per_category": {k: v.to_dict() for k, v in sorted(self.per_category.items())},
        }


def evaluate(pairs: Iterable[tuple[str, str, str | None, Iterable[str]]]) -> Report:
    """pairs: (category, attribute, prediction, gold forms), one per (product, attribute) with gold."""
    report = Report()
    for category, attribute, pred, gold in pairs:
        report.add(category, attribute, pred, gold)
    return report
