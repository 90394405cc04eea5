"""Did a change leave decoding exactly as it was? Two `evaluate --predictions` files compared: the
same products in the same order, the same value text and the same confidence for every attribute of
every decoder, bit for bit (float32 on the same host makes them exact).

    .venv/bin/python -m extraction evaluate --data FILE --decoders hpd --dtype float32 --predictions before.jsonl
    (change the code)
    .venv/bin/python -m extraction evaluate --data FILE --decoders hpd --dtype float32 --predictions after.jsonl
    .venv/bin/python -m tools.bench.same_decoding before.jsonl after.jsonl   # exit 0: identical
"""

import argparse
import json
import sys
from dataclasses import dataclass

NOT_DECODERS = ("key", "category", "gold")  # the fields of a predictions line beside each decoder's values


@dataclass
class Comparison:
    products: int = 0
    values: int = 0
    same_values: int = 0
    same_confidences: int = 0
    largest_difference: float = 0.0

    @property
    def identical(self) -> bool:
        return self.products > 0 and self.same_values == self.same_confidences == self.values


class NotComparable(ValueError):
    """The two files do not hold the same products and attributes; the message says where."""


def read(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(before: list[dict], after: list[dict]) -> Comparison:
    if len(before) != len(after):
        raise NotComparable(f"{len(before)} products before, {len(after)} after")
    out = Comparison(products=len(before))
    for line, (a, b) in enumerate(zip(before, after, strict=True), start=1):
        if a["key"] != b["key"]:
            raise NotComparable(f"line {line}: product {a['key']!r} before, {b['key']!r} after")
        for decoder in (k for k in a if k not in NOT_DECODERS):
            if set(a[decoder]) != set(b.get(decoder, {})):
                raise NotComparable(f"line {line} ({a['key']}), {decoder}: not the same attributes")
            for attribute, (text, confidence) in a[decoder].items():
                text_after, confidence_after = b[decoder][attribute]
                out.values += 1
                out.same_values += text == text_after
                out.same_confidences += confidence == confidence_after
                out.largest_difference = max(out.largest_difference, abs(confidence - confidence_after))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    args = parser.parse_args(argv)
    try:
        result = compare(read(args.before), read(args.after))
    except NotComparable as exc:
        parser.exit(2, f"not comparable: {exc}\n")
    sys.stdout.write(
        f"{args.before} vs {args.after}: {result.products} products, {result.values} values; identical "
        f"values {result.same_values}/{result.values}, identical confidences "
        f"{result.same_confidences}/{result.values}, largest confidence difference {result.largest_difference:.3g}\n"
    )
    return 0 if result.identical else 1


if __name__ == "__main__":
    sys.exit(main())
