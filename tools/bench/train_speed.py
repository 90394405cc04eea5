"""How fast does the trainer train, and where does a step's time go? Training recipes run on the
real data, interleaved: a few steps of each in turns, every recipe on the same batches in the same
order, so that a busy shared machine slows them all alike.

    .venv/bin/python -m tools.bench.train_speed --turns 3 --steps 1 \\
        --new "--base-dtype bfloat16 --train-layers 6" -- <the arguments of `extraction train`>

The arguments after `--` are the train command's (the old recipe); --new adds flags to them (the new
recipe; without it the old one runs alone). Printed per recipe: tokens/s (all, and labelled: the
tokens that carry a loss), GFLOP/s achieved (FLOPs counted by torch's FlopCounterMode, attention
included) against this host's peak for the step's own matrix shapes (torch.matmul in float32 and
bfloat16, timed in the same run), the peak resident memory while its steps ran, and the share of a
step's time per phase (engine/train/phases.py). In each turn, a recipe's first step warms up (its
pages fault in again after the other recipe's) and is not counted. Nothing is saved.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

from extraction.engine.cli import add_train_parser
from extraction.engine.train.allocator import limit_fragmentation, release_freed_memory, run_under_jemalloc
from extraction.engine.train.corpus import load_corpus
from extraction.engine.train.losses import causal_lm
from extraction.engine.train.phases import PhaseClock, recording_clock
from extraction.engine.train.row_packing import IGNORE
from extraction.engine.train.trainer import optimizer, prepare_run, train_step

log = logging.getLogger("tools.bench.train_speed")

# the body's parts timed by module hooks: (the phase, the layer attribute that holds the module)
BODY_PARTS = (("forward: body / attention", "self_attn"), ("forward: body / MLP", "mlp"))
EMBEDDING = "forward: body / embedding"
STEP = "step (all phases)"


# ---------------------------------------------------------------------------------- the host


def host_name() -> str:
    """The CPU's model name from /proc/cpuinfo, with its bfloat16 support."""
    name = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    bf16 = "avx512_bf16" if torch.cpu._is_avx512_bf16_supported() else "no avx512_bf16"
    return f"{name} ({bf16}, {torch.backends.cpu.get_cpu_capability()}, {torch.get_num_threads()} threads)"


def matmul_peak(rows: int, inner: int, cols: int, dtype: torch.dtype, repeats: int = 3) -> float:
    """GFLOP/s of the best of `repeats` torch.matmul [rows, inner] @ [inner, cols] in dtype."""
    a, b = torch.randn(rows, inner).to(dtype), torch.randn(inner, cols).to(dtype)
    torch.matmul(a, b)  # warm-up: oneDNN picks its kernel on the first call
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * rows * inner * cols / best / 1e9


def peak_rss_bytes() -> int:
    """The process's peak resident memory since the last reset_peak_rss (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def reset_peak_rss() -> None:
    """Reset VmHWM to the current resident size (Linux: 5 to /proc/self/clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        log.info("cannot reset the peak resident memory: figures are the process's peak")


# CPU sdpa runs as this op, which torch's counter does not know: count it as the flash kernels are
def _cpu_flash(query_shape, key_shape, value_shape, *args, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def _cpu_flash_backward(grad_out_shape, query_shape, key_shape, value_shape, *args, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def flop_counter() -> FlopCounterMode:
    aten = torch.ops.aten
    shapes = {}
    for op, formula in (
        ("_scaled_dot_product_flash_attention_for_cpu", _cpu_flash),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", _cpu_flash_backward),
    ):
        if hasattr(aten, op):
            shapes[getattr(aten, op)] = shape_formula(formula)
    return FlopCounterMode(display=False, custom_mapping=shapes)


def shape_formula(formula):
    """A flop formula of tensor shapes, called by FlopCounterMode with the op's arguments."""

    def count(*args, out_shape=None, **kwargs):
        shapes = [a.shape if isinstance(a, torch.Tensor) else a for a in args]
        return formula(*shapes)

    count._get_raw = True  # FlopCounterMode hands the arguments as they are
    return count


# ---------------------------------------------------------------------------------- one recipe


@dataclass
class Tally:
    """A recipe's counted steps."""

    steps: int = 0
    tokens: int = 0
    labelled: int = 0
    flops: int = 0
    peak_rss: int = 0
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    rates: list[float] = field(default_factory=list)  # tokens/s of each counted step, in turn order


class Recipe:
    """One training recipe prepared as the train command prepares it, stepping on its own batches."""

    def __init__(self, name: str, args, corpus):
        self.name, self.args = name, args
        torch.manual_seed(args.seed)
        self.run = prepare_run(args, corpus)
        self.opt = optimizer(self.run.model, self.run.cfg)
        self.stream = self.run.sampler.batches(self.run.cfg.batch_tokens)
        self.tally = Tally()
        self.run.model.train()
        time_body_parts(self.run.model)

    def step(self, counted: bool = True) -> None:
        clock = PhaseClock()
        reset_peak_rss()
        flops = flop_counter()
        start = time.perf_counter()
        with clock.recording(), flops:
            rows = next(self.stream)
            clock.seconds["data: row packing"] += time.perf_counter() - start
            train_step(self.run.model, self.opt, rows, self.run.tokenizer.pad_token_id, self.run.cfg, "cpu")
        clock.seconds[STEP] = time.perf_counter() - start
        if not counted:
            return
        t = self.tally
        t.steps += 1
        t.tokens += sum(len(r.input_ids) for r in rows)
        t.labelled += sum(lab != IGNORE for r in rows for lab in r.labels)
        t.flops += flops.get_total_flops()
        t.peak_rss = max(t.peak_rss, peak_rss_bytes())
        t.rates.append(sum(len(r.input_ids) for r in rows) / clock.seconds[STEP])
        for name, seconds in clock.seconds.items():
            t.seconds[name] += seconds


def time_body_parts(model) -> None:
    """Forward hooks that time the embedding and each layer's attention and MLP as phases."""
    lm = causal_lm(model)
    parts = [(EMBEDDING, lm.get_input_embeddings())]
    for layer in lm.base_model.layers:
        parts += [(name, getattr(layer, attr)) for name, attr in BODY_PARTS if hasattr(layer, attr)]
    for name, module in parts:
        started: list[float] = []
        module.register_forward_pre_hook(lambda *_, s=started: s.append(time.perf_counter()))
        module.register_forward_hook(lambda *_, s=started, n=name: add_time(n, s))


def add_time(name: str, started: list[float]) -> None:
    clock = recording_clock()
    start = started.pop()
    if clock is not None:
        clock.seconds[name] += time.perf_counter() - start


# ---------------------------------------------------------------------------------- the report

PHASE_ORDER = (
    "data: row packing",
    "data: collate",
    "forward: HPD mask",
    "forward: body",
    EMBEDDING,
    "forward: body / attention",
    "forward: body / MLP",
    "forward: output layer and losses",
    "backward",
    "optimizer",
)


def recipe_lines(recipe: Recipe, peaks: dict[str, float]) -> list[str]:
    t = recipe.tally
    step = t.seconds[STEP]
    gflops = t.flops / max(step, 1e-9) / 1e9
    lines = [
        f"{recipe.name}: {shlex.join(recipe.args.extra) or '(the train arguments as given)'}",
        f"  {t.steps} steps, {t.tokens} tokens ({t.labelled} labelled) in {step:.1f} s: "
        f"{t.tokens / max(step, 1e-9):.1f} tokens/s, {t.labelled / max(step, 1e-9):.2f} labelled tokens/s "
        f"(best step {max(t.rates, default=0):.1f} tokens/s)",
        f"  {gflops:.1f} GFLOP/s achieved ({t.flops / max(t.steps, 1) / 1e12:.2f} TFLOP a step): "
        + ", ".join(f"{gflops / peak:.0%} of the {name} matmul peak" for name, peak in peaks.items()),
        f"  peak resident memory {t.peak_rss / 2**30:.2f} GiB",
        f"  {'phase':<40} {'s/step':>8} {'share':>6}",
    ]
    counted = 0.0
    for name in PHASE_ORDER:
        seconds = t.seconds.get(name, 0.0)
        if "/" not in name:
            counted += seconds
        lines.append(f"  {name:<40} {seconds / max(t.steps, 1):8.2f} {seconds / max(step, 1e-9):6.1%}")
    other = step - counted
    lines.append(
        f"  {'other (loop, zero_grad, total loss)':<40} {other / max(t.steps, 1):8.2f} {other / step:6.1%}"
    )
    return lines


def report(recipes: list[Recipe], peaks: dict[str, float], host: str) -> str:
    lines = [f"host: {host}"]
    lines += [
        f"matmul peak ({name}, the step's MLP shape): {peak:.1f} GFLOP/s" for name, peak in peaks.items()
    ]
    for recipe in recipes:
        lines += recipe_lines(recipe, peaks)
    if len(recipes) > 1:
        old = recipes[0].tally
        old_speed = old.tokens / max(old.seconds[STEP], 1e-9)
        for recipe in recipes[1:]:
            new = recipe.tally
            ratio = new.tokens / max(new.seconds[STEP], 1e-9) / max(old_speed, 1e-9)
            # the same batch in each recipe's step of a turn: their ratio, turn by turn
            turns = " ".join(f"{n / o:.2f}x" for n, o in zip(new.rates, old.rates, strict=True))
            best = max(new.rates, default=0) / max(max(old.rates, default=0), 1e-9)
            lines.append(f"{recipe.name} / {recipes[0].name}: {ratio:.2f}x tokens/s")
            lines.append(f"  step by step: {turns}; best step against best step: {best:.2f}x")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------- the command


def train_args(argv: list[str], extra: list[str]):
    parser = argparse.ArgumentParser(prog="extraction train")
    add_train_parser(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["train", *argv, *extra])
    args.extra = extra
    return args


def parse(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=3, help="turns; each runs --steps steps of every recipe")
    p.add_argument("--steps", type=int, default=1, help="steps of a recipe per turn")
    p.add_argument("--new", default=None, help="flags the new recipe adds to the train arguments")
    p.add_argument("train", nargs=argparse.REMAINDER, help="-- then the arguments of `extraction train`")
    args = p.parse_args(argv)
    args.train = args.train[1:] if args.train[:1] == ["--"] else args.train
    return args


def main(argv: list[str] | None = None) -> int:
    """argv None: the command as typed in a shell, which re-executes itself under jemalloc as the
    train command does (the same allocator as training: memory and speed as there)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    if argv is None:
        run_under_jemalloc("tools.bench.train_speed")
    args = parse(argv)
    old = train_args(args.train, [])
    torch.set_num_threads(old.threads)
    limit_fragmentation()
    corpus = load_corpus(old.data, Path(old.splits_dir))
    recipes = [Recipe("old", old, corpus)]
    if args.new:
        recipes.append(Recipe("new", train_args(args.train, shlex.split(args.new)), corpus))
    for turn in range(args.turns):
        for recipe in recipes:
            # The other recipe's pages go back to the system first: training's allocator keeps them
            # (train/allocator.py), and both working sets at once outgrow the memory of a small
            # host. So each turn starts with a step that faults its pages in again, as a real run's
            # first step does, and is not counted; the counted steps run on kept pages, as a real
            # run's do.
            release_freed_memory()
            recipe.step(counted=False)
            for _ in range(args.steps):
                recipe.step()
        log.info("turn %d of %d done", turn + 1, args.turns)
    model = causal_lm(recipes[0].run.model).config
    shape = (old.batch_tokens, model.hidden_size, model.intermediate_size)
    peaks = {"float32": matmul_peak(*shape, torch.float32), "bfloat16": matmul_peak(*shape, torch.bfloat16)}
    sys.stdout.write(report(recipes, peaks, host_name()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
