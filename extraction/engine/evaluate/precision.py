"""`python -m extraction precision`: the model at each CPU precision (float32, bfloat16, int8 dynamic
quantization, torch.compile) decoding the same products with HPD and AR-JSON, interleaved chunk by
chunk (every precision and decoder on a chunk before the next chunk, the order rotating), so that
load on a shared machine lands on all of them alike. Quality is computed over every product; speed
is each one's median products/s over the chunks and, per chunk, the reference's seconds over its
seconds (median and min-max): how many times faster than the reference (--base, float32 unless
told) on the same products.

The verdict names the fastest precision whose F1 stays within 0.5 point of the reference's for
every decoder measured: what a model's slotwise.json "cpu_dtype" / "cpu_quantize" should say. With
--base bfloat16 and bfloat16-free beside it, the ratio is what the slot constraint costs at the
CPU default."""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
from dataclasses import dataclass

from extraction.engine import data as ave
from extraction.engine.api import Extractor, default_model_dir
from extraction.engine.budgets import model_budgets
from extraction.engine.evaluate.decoder_runs import (
    Interleaved,
    Run,
    add_result,
    chunks,
    finish,
    groups,
    spread,
)
from extraction.engine.evaluate.report import table, write

# name -> Extractor arguments (compile: modeling.compile_layers, each decoder layer's MLP and norms
# compiled with dynamic shapes; *-free: no slot constraint, what the constraint costs, interleaved like the rest)
PRECISIONS = {
    "float32": {"dtype": "float32"},
    "bfloat16": {"dtype": "bfloat16"},
    "int8": {"dtype": "float32", "quantize": "int8"},
    "compile": {"dtype": "float32", "compile": True},
    "bfloat16-compile": {"dtype": "bfloat16", "compile": True},
    "float32-free": {"dtype": "float32", "extractive": False, "typed": False},
    "bfloat16-free": {"dtype": "bfloat16", "extractive": False, "typed": False},
}
EQUAL_F1 = 0.005  # within half a point of the reference's F1 counts as equal quality
REFERENCE = "float32"  # what the table compares with unless --base names another precision
SETTINGS = {"hpd": {"stack": 1, "rows": 16}, "ar": {"batch": 16}, "ar-honest": {"batch": 16}}


@dataclass
class Bench:
    runs: dict[str, Run]  # "decoder/precision" -> its run over every product
    timing: Interleaved


def load(name: str, model_dir) -> Extractor:
    from extraction.engine.modeling import compile_layers

    kw = dict(PRECISIONS[name])
    compiled = kw.pop("compile", False)
    ex = Extractor(model_dir, calibrate=False, **kw)
    if compiled:
        compile_layers(ex.model)
    return ex


def interleave(extractors: dict[str, Extractor], decoders: list[str], products, grouped, size: int) -> Bench:
    keys = [f"{d}/{p}" for d in decoders for p in extractors]
    runs = {k: Run(k, SETTINGS[k.split("/")[0]], predictions=[{} for _ in products]) for k in keys}
    timing = Interleaved()
    for n, (idx, docs, attrs) in enumerate(chunks(grouped, size)):
        seconds = {}
        for k in keys[n % len(keys) :] + keys[: n % len(keys)]:  # a rotating order
            decoder, precision = k.split("/")
            res, stats = extractors[precision].extract(docs, attrs, decoder=decoder, **SETTINGS[decoder])
            add_result(runs[k], idx, res, stats)
            seconds[k] = stats.seconds
        timing.sizes.append(len(idx))
        timing.seconds.append(seconds)
    return Bench({k: finish(r, products, grouped) for k, r in runs.items()}, timing)


def report(
    bench: Bench, decoders: list[str], precisions: list[str], reference: str = REFERENCE
) -> str | None:
    """Print the table; -> the fastest precision at equal F1 (None when the reference was not measured)."""
    rows = [["decoder", "precision", "F1", f"F1 - {reference}", "products/s", f"x {reference} (min-max)"]]
    ok, speed = {p: True for p in precisions}, {p: [] for p in precisions}
    for d in decoders:
        base = bench.runs.get(f"{d}/{reference}")
        for p in precisions:
            run = bench.runs[f"{d}/{p}"]
            f1 = run.report.micro.f1
            delta = f1 - base.report.micro.f1 if base else 0.0
            ratios = bench.timing.ratios(f"{d}/{p}", f"{d}/{reference}") if base else []
            med = statistics.median(ratios) if ratios else 0.0
            ok[p] = ok[p] and abs(delta) <= EQUAL_F1
            speed[p].append(med)
            spread_text = f"{med:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-"
            rate = bench.timing.median_products_per_second(f"{d}/{p}")
            rows.append([d, p, f"{f1:.3f}", f"{100 * delta:+.1f} pt", f"{rate:.2f}", spread_text])
    table(rows)
    if reference not in precisions:
        return None
    candidates = [p for p in precisions if ok[p] and PRECISIONS[p].get("extractive", True)]
    return max(candidates, key=lambda p: min(speed[p]))


def run_precision(args: argparse.Namespace) -> int:
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    decoders = [d.strip() for d in args.decoders.split(",") if d.strip()]
    unknown = [p for p in precisions if p not in PRECISIONS] + [d for d in decoders if d not in SETTINGS]
    if unknown:
        raise SystemExit(f"unknown precision or decoder: {', '.join(unknown)}")
    if args.base not in precisions:
        raise SystemExit(f"--base {args.base}: not among --precisions {args.precisions}")
    if not pathlib.Path(args.data).is_file():
        raise SystemExit(f"{args.data}: no such file")
    everything = ave.load(args.data)
    products = spread(everything, args.sample or 0)
    model_dir = args.model or default_model_dir()
    grouped = groups(products, ave.schemas(everything), *model_budgets(model_dir))
    extractors = {p: load(p, args.model) for p in precisions}
    _, (_, docs, attrs) = next(iter(grouped.items()))
    for ex in extractors.values():  # warm-up: lazy initialisation, and compilation for "compile"
        for d in decoders:
            ex.extract(docs[:2], attrs, decoder=d, **SETTINGS[d])
    write(f"model: {model_dir}  data: {args.data}  products: {len(products)}")
    start = os.getloadavg()
    bench = interleave(extractors, decoders, products, grouped, args.chunk)
    end = os.getloadavg()
    best = report(bench, decoders, precisions, args.base)
    write(
        f"chunks: {len(bench.timing.sizes)}; load average at start {' '.join(f'{x:.2f}' for x in start)}, "
        f"at end {' '.join(f'{x:.2f}' for x in end)}"
    )
    if best is not None:
        write(
            f"fastest at equal F1 (within {100 * EQUAL_F1:.1f} pt of {args.base} for {', '.join(decoders)}): {best}"
        )
    return 0
