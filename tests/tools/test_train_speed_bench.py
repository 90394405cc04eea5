"""Issue 46: the training speed bench runs the old and the new recipe in turns on the same batches
and prints, for each, its speed, its GFLOP/s against this host's matmul peak, its peak memory and
where a step's time goes."""

from __future__ import annotations

import re

from tests.engine.test_train_speed import adapter_args
from tools.bench import train_speed
from tools.bench.train_speed import PHASE_ORDER


def test_the_bench_prints_both_recipes_phase_tables_and_their_ratio(tmp_path, capsys):
    args = adapter_args(tmp_path)  # a tiny Gemma 3 adapter with a trained <|eov|> row
    train = ["--data", *args.data, "--base", args.base, "--splits-dir", args.splits_dir]
    train += ["--batch-tokens", "600", "--row-tokens", "300", "--threads", "1", "--seed", "3"]
    new = "--base-dtype bfloat16 --train-layers 1 --sparse-token-rows --attention blocks"
    assert train_speed.main(["--turns", "2", "--new", new, "--", *train]) == 0
    out = capsys.readouterr().out
    assert out.startswith("host: ") and "matmul peak (float32" in out and "matmul peak (bfloat16" in out
    old_part, new_part = out.split("\nold: ")[1].split("\nnew: ")
    assert new_part.startswith(new)
    for part in (old_part, new_part):
        steps, tokens, labelled = map(
            int, re.search(r"(\d+) steps, (\d+) tokens \((\d+) labelled\)", part).groups()
        )
        assert steps == 2 and tokens > labelled > 0  # two turns of one step, the warm-up not counted
        assert float(re.search(r"([\d.]+) GFLOP/s achieved", part).group(1)) > 0
        assert float(re.search(r"peak resident memory ([\d.]+) GiB", part).group(1)) > 0
        for name in PHASE_ORDER:
            assert re.search(rf"\n  {re.escape(name)} +[\d.]+ +[\d.]+%", part), name
    # both recipes saw the same batches: the same tokens
    assert re.search(r"(\d+) tokens", old_part).group(1) == re.search(r"(\d+) tokens", new_part).group(1)
    assert re.search(r"\nnew / old: [\d.]+x tokens/s\n  step by step: [\d.]+x [\d.]+x; best step", out)
