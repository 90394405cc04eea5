"""How many wrong values are span boundary errors, per attribute (issue #47 point 2), read from
`evaluate --predictions` files: a wrong value (VW in the AVE metric) is a boundary error when a gold
form lies inside it ("too long": "Light Roast Coffee" for "Light Roast") or it lies inside a gold
form ("too short": "Finn" for "Finn Comfort"), compared case-insensitively and on word edges; other
wrong values are "other". Each file's HPD values (or --decoder's) are read; given two files of the same products
(before and after a change), the table puts them side by side.

    .venv/bin/python -m extraction evaluate --data ../shared/data/ave/oa-mine/dev.jsonl \\
        --decoders hpd --dtype float32 --predictions before.jsonl
    .venv/bin/python -m tools.bench.boundary_errors before.jsonl [after.jsonl] [--top 15]

Review and auto-accept order values by confidence, so the table also gives the mean stored
confidence of the right values and of the boundary errors: a boundary error should sit low.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from extraction.engine.metric import is_na, outcome

KINDS = ("too long", "too short", "other")


def error_kind(value: str, gold: list[str]) -> str:
    """The kind of a wrong value against its gold forms (none of which it equals)."""
    v = value.strip().lower()
    forms = [g.strip().lower() for g in gold if not is_na(g)]
    if any(_inside(g, v) for g in forms):
        return "too long"
    if any(_inside(v, g) for g in forms):
        return "too short"
    return "other"


def _inside(part: str, whole: str) -> bool:
    """part is a span of whole that starts and ends on word edges ("mint" is not a span of
    "peppermint tea": that is another word, not a boundary)."""
    return re.search(rf"(?<!\w){re.escape(part)}(?!\w)", whole) is not None


@dataclass
class Tally:
    """One attribute's (or the whole file's) right and wrong values with their confidences."""

    right: int = 0
    wrong: Counter = field(default_factory=Counter)
    right_confidence: float = 0.0
    boundary_confidence: float = 0.0

    def add(self, kind: str | None, confidence: float) -> None:
        if kind is None:
            self.right += 1
            self.right_confidence += confidence
            return
        self.wrong[kind] += 1
        if kind != "other":
            self.boundary_confidence += confidence

    @property
    def wrongs(self) -> int:
        return sum(self.wrong.values())

    @property
    def boundary(self) -> int:
        return self.wrong["too long"] + self.wrong["too short"]

    def cell(self) -> str:
        """'right wrong (too long/too short, boundary share) mean confidence right/boundary'."""
        if not self.right and not self.wrongs:
            return "-"
        share = f"{self.boundary / self.wrongs:.0%}" if self.wrongs else "-"
        right_c = f"{self.right_confidence / self.right:.2f}" if self.right else "-"
        boundary_c = f"{self.boundary_confidence / self.boundary:.2f}" if self.boundary else "-"
        return (
            f"{self.right} {self.wrongs} ({self.wrong['too long']}/{self.wrong['too short']}, {share}) "
            f"{right_c}/{boundary_c}"
        )


def tallies(path: str, decoder: str) -> dict[str, Tally]:
    """Per attribute, and '(all)', the file's shown values (n/a is not shown) by outcome."""
    out: dict[str, Tally] = defaultdict(Tally)
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            record = json.loads(line)
            if decoder not in record:
                raise SystemExit(f"{path}:{number}: no {decoder!r} values (decoders: {sorted(record)})")
            for attribute, (value, confidence) in record[decoder].items():
                gold = record["gold"].get(attribute)
                if gold is None or is_na(value):
                    continue  # unjudged, or not shown
                result = outcome(value, gold)
                if result not in ("VC", "VW"):
                    continue  # NV: a value where gold says absent, not a boundary question
                kind = None if result == "VC" else error_kind(value, gold)
                out[attribute].add(kind, confidence)
                out["(all)"].add(kind, confidence)
    return dict(out)


def render(files: list[str], decoder: str, top: int) -> list[str]:
    tables = [tallies(p, decoder) for p in files]
    first = tables[0]
    order = sorted((a for a in first if a != "(all)"), key=lambda a: -first[a].wrongs)[:top]
    head = ["attribute"] + [
        f"{p}: right wrong (long/short, boundary share) confidence right/boundary" for p in files
    ]
    rows = [head]
    for attribute in ["(all)", *order]:
        rows.append([attribute] + [t.get(attribute, Tally()).cell() for t in tables])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("files", nargs="+", help="evaluate --predictions files of the same products")
    p.add_argument("--decoder", default="hpd")
    p.add_argument("--top", type=int, default=15, help="attributes with the most wrong values shown")
    args = p.parse_args(argv)
    sys.stdout.write("\n".join(render(args.files, args.decoder, args.top)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
