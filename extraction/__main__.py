"""`python -m extraction <command>`: evaluate (decoders side by side) and train (fine-tune a model)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    from extraction.engine.evaluate import add_evaluate_parser
    from extraction.engine.train import add_train_parser

    parser = argparse.ArgumentParser(prog="python -m extraction")
    sub = parser.add_subparsers(dest="command", required=True)
    add_evaluate_parser(sub)
    add_train_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["train"]:
        from extraction.engine.allocator import run_under_jemalloc

        run_under_jemalloc()  # faster training with flat memory (allocator.py); returns if absent
    sys.exit(main())
