"""`python -m extraction <command>`: evaluate (decoders side by side) and train (the bundled model)."""

from __future__ import annotations

import argparse
import sys


def add_train(subparsers) -> None:
    """train lives in extraction/engine/train.py (its own owner); absent until it is written."""
    try:
        from extraction.engine.train import add_train_parser
    except ModuleNotFoundError as err:
        if err.name != "extraction.engine.train":
            raise
        p = subparsers.add_parser("train", help="train the bundled model (not available yet)")
        p.set_defaults(func=lambda _args: sys.exit("extraction.engine.train is not available yet"))
        return
    add_train_parser(subparsers)


def build_parser() -> argparse.ArgumentParser:
    from extraction.engine.evaluate import add_evaluate_parser

    parser = argparse.ArgumentParser(prog="python -m extraction")
    sub = parser.add_subparsers(dest="command", required=True)
    add_evaluate_parser(sub)
    add_train(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train" and "func" not in vars(args):
        from extraction.engine.train import run_train

        return run_train(args) or 0
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
