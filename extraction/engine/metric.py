"""The AVE metric of shared/data/ave/README.md, the one implementation the CLI, the web app and
the tests share. Pure Python: importing it must not import torch (the web process imports it).

Per (product, attribute) pair with gold, compare the prediction with the gold forms (exact string
match after trimming; any accepted form counts):
    VC value predicted, one of the gold forms     VW value predicted, gold has other values
    NV value predicted, gold is n/a               VN n/a predicted, gold has a value
    NN both n/a (not counted)
precision = VC / (NV + VC + VW), recall = VC / (VN + VC + VW), F1 = harmonic mean.

Absent attributes (gold "n/a", as AE-110k and WDC-PAVE say it):
    gold n/a pairs = NV + NN
    n/a acc = NN / (NN + NV): of the pairs whose gold is n/a, the share predicted n/a (1 - n/a acc is
              the share given a value, NV / gold n/a)
    n/a P   = NN / (NN + VN): of the judged pairs predicted n/a, the share whose gold is n/a
Unjudged pairs: an attribute of the category schema that a record does not list (OA-Mine, AE-110k)
has no gold and is in none of the counts above; `unjudged` counts them and `unjudged_valued` those
given a value (not n/a), reported as the share unjudged_valued / unjudged. Where an untagged
attribute means absent (OA-Mine, shared/data/ave/README.md), two more figures say what a catalog
team sees in every slot:
    shown P          = VC / (VC + VW + NV + unjudged_valued): every value shown, unjudged ones wrong
    F1 unjudged n/a  = F1 with that precision (unjudged pairs as gold n/a; recall unchanged)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields

from extraction.domain import NA

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
    unjudged: int = 0  # (product, attribute) pairs of the schema without gold
    unjudged_valued: int = 0  # ... of them given a value (not n/a)

    def add(self, kind: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)

    def add_unjudged(self, pred: str | None) -> None:
        self.unjudged += 1
        self.unjudged_valued += not is_na(pred)

    @classmethod
    def summed(cls, parts: Iterable[dict]) -> Counts:
        """Several runs' counts (to_dict() or --json entries) added field by field: the counts of
        one run over all of their products (pool)."""
        parts = list(parts)
        return cls(**{f.name: sum(p[f.name] for p in parts) for f in fields(cls)})

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

    @property
    def gold_na(self) -> int:
        """Judged pairs whose gold is n/a."""
        return self.NV + self.NN

    @property
    def na_accuracy(self) -> float | None:
        """NN / (NN + NV): share of the gold-n/a pairs predicted n/a; None without gold n/a."""
        return self.NN / self.gold_na if self.gold_na else None

    @property
    def na_precision(self) -> float | None:
        """NN / (NN + VN): share of the judged n/a predictions whose gold is n/a; None without any."""
        d = self.NN + self.VN
        return self.NN / d if d else None

    @property
    def shown_precision(self) -> float:
        """Of every value shown (non-n/a predictions, judged or not), the share right, unjudged ones
        counted wrong: what a catalog team sees where an untagged attribute means absent (OA-Mine)."""
        d = self.NV + self.VC + self.VW + self.unjudged_valued
        return self.VC / d if d else 0.0

    @property
    def f1_unjudged_absent(self) -> float:
        """F1 with unjudged pairs counted as gold "n/a" (a value there is NV, n/a there is NN):
        recall is unchanged, precision is shown_precision."""
        p, r = self.shown_precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def unjudged_value_share(self) -> float | None:
        """unjudged_valued / unjudged; None without unjudged pairs."""
        return self.unjudged_valued / self.unjudged if self.unjudged else None

    def to_dict(self) -> dict:
        return {
            **{k: getattr(self, k) for k in OUTCOMES},
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "gold_na": self.gold_na,
            "na_accuracy": self.na_accuracy,
            "na_precision": self.na_precision,
            "unjudged": self.unjudged,
            "unjudged_valued": self.unjudged_valued,
            "unjudged_value_share": self.unjudged_value_share,
            "shown_precision": self.shown_precision,
            "f1_unjudged_absent": self.f1_unjudged_absent,
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

    def add_unjudged(self, category: str, attribute: str, pred: str | None) -> None:
        """A schema attribute the record does not judge (no gold): counted apart, not in P/R/F1."""
        for counts in (
            self.micro,
            self.per_attribute.setdefault(attribute, Counts()),
            self.per_category.setdefault(category, Counts()),
        ):
            counts.add_unjudged(pred)

    def to_dict(self) -> dict:
        return {
            "micro": self.micro.to_dict(),
            "per_attribute": {k: v.to_dict() for k, v in sorted(self.per_attribute.items())},
            "per_category": {k: v.to_dict() for k, v in sorted(self.per_category.items())},
        }


def evaluate(pairs: Iterable[tuple[str, str, str | None, Iterable[str] | None]]) -> Report:
    """pairs: (category, attribute, prediction, gold forms), one per (product, attribute); gold None
    marks an unjudged pair (a schema attribute the record does not list)."""
    report = Report()
    for category, attribute, pred, gold in pairs:
        if gold is None:
            report.add_unjudged(category, attribute, pred)
        else:
            report.add(category, attribute, pred, gold)
    return report
