"""`python -m extraction evaluate`: every decoder on the same products in one process, each at its
best settings from a short sweep; quality (metric.py) and speed side by side, then the n/a figures
(metric.py) and the calibration of value confidences (calibration.py) per decoder.

Confidences are measured raw (the Extractor is built with calibrate=False); --fit-calibration
fits one scaling (slope, bias) per decoder on every evaluated product (plus the points of earlier --json
outputs named by --calibration-with) and stores it in the model directory's slotwise.json.

The steps: evaluate_runs.py (what runs on what, interleaved), evaluate_tables.py (what is
printed and written), evaluate_calibration.py (--fit-calibration); this module is the command
(its arguments: extraction/engine/cli.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
from dataclasses import dataclass

from extraction.engine import data as ave
from extraction.engine.api import Extractor, ModelMissing, default_model_dir
from extraction.engine.budgets import model_budgets
from extraction.engine.evaluate.calibration_fit import calibration_inputs, write_calibration
from extraction.engine.evaluate.decoder_runs import (
    Inputs,
    Interleaved,
    Run,
    UsageError,
    groups,
    load_inputs,
    run_interleaved,
    run_once,
    score_normalized,
    setting_text,
    settings_for,
    sweep_sample,
)
from extraction.engine.evaluate.report import (
    best_table,
    normalized_table,
    quality_table,
    ratio_summary,
    results_json,
    seen_table,
    summary,
    table,
    write,
    write_floor,
    write_header,
    write_hpd_checks,
    write_json,
    write_load,
    write_predictions,
)

# ar: AR-JSON as the paper runs it; ar-honest: the same values at AR's honest best (HPD.md)
DEFAULT_DECODERS = "ar,ar-honest,pld,fork,hpd"
SWEEP_HEAD = ["decoder", "settings", "products/s", "seconds", "F1", "fwd steps", "tok/step", "peak MB"]


@dataclass
class Outcome:
    """Every decoder at its best settings over every product, and how it was measured."""

    best: dict[str, Run]
    timing: Interleaved
    results: dict[str, dict]  # decoder -> summary (report.summary) with its speed figures
    sweep: list[list[str]]  # the sweep table, header first
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float]


def run_sweep(ex: Extractor, decoders, args, sample, sample_grouped, sweep: list) -> dict[str, dict]:
    """Each decoder at each of its candidate settings on the sample; -> decoder -> fastest setting."""
    plan = {}
    for d in decoders:
        runs = []
        for s in settings_for(d, args):
            run = run_once(ex, d, s, sample, sample_grouped, args.device)
            sm = summary(run, len(sample))
            label = setting_text(s) if s else "auto (" + ",".join(sorted(set(run.layouts))) + ")"
            sweep.append(
                [
                    d,
                    label,
                    f"{sm['products_per_second']:.2f}",
                    f"{run.seconds:.2f}",
                    f"{sm['f1']:.3f}",
                    str(run.forward_steps),
                    f"{sm['tokens_per_step']:.1f}",
                    f"{run.peak_memory_mb:.0f}",
                ]
            )
            write(f"  {d:16s} {label:34s} {sm['products_per_second']:8.2f} products/s  F1 {sm['f1']:.3f}")
            runs.append(run)
        plan[d] = min(runs, key=lambda r: r.seconds).setting
    return plan


def choose_settings(ex: Extractor, decoders, args, inputs: Inputs, budgets) -> tuple[dict, list]:
    """decoder -> its settings: the forced ones, else the fastest of a sweep on --sweep-limit
    products (printed); -> (plan, the sweep table)."""
    plan = {d: settings_for(d, args)[0] for d in decoders}
    sweep = [SWEEP_HEAD]
    if any(len(settings_for(d, args)) > 1 for d in decoders):
        sample = sweep_sample(inputs.products, args.sweep_limit, args.chunk)
        write(f"sweep on {len(sample)} products (one decoder after the other; it only picks settings):")
        sample_grouped = groups(sample, inputs.schemas, *budgets, inputs.types)
        plan = run_sweep(ex, decoders, args, sample, sample_grouped, sweep)
        write()
        write("sweep:")
        table(sweep)
        write()
    return plan, sweep


def decoder_results(ex: Extractor, inputs: Inputs, best: dict[str, Run], timing: Interleaved, grouped):
    """decoder -> summary with its speed (median over chunks, HPD's ratio over it) and, under
    --gold normalized, its F1 against the extracted gold (scored first: it rescores the run)."""
    n = len(inputs.products)
    score_schemas = {cat: [a.name for a in g[2]] for cat, g in grouped.items()}
    extracted_reports = {
        d: score_normalized(r, inputs.products, inputs.extracted_gold, score_schemas)
        for d, r in best.items()
        if inputs.normalized
    }
    results = {d: summary(r, n, ex.scalings.get(d), ex.na_scalings.get(d)) for d, r in best.items()}
    for d, rep in extracted_reports.items():
        m = rep.micro
        results[d]["gold"] = "normalized"
        results[d]["extracted_gold"] = {"f1": m.f1, "precision": m.precision, "recall": m.recall}
    for d, sm in results.items():
        sm["median_products_per_second"] = timing.median_products_per_second(d)
        if "hpd" in best and d != "hpd":
            sm["hpd_ratio"] = ratio_summary(timing.ratios("hpd", d))
    return results


def chunk_done(k: int, of: int, n: int, seconds: dict[str, float]) -> None:
    """A progress line per interleaved chunk: a long run shows how far it got, and a stopped one
    leaves its chunks' timings behind."""
    times = ", ".join(f"{d} {s:.1f} s" for d, s in seconds.items())
    write(f"  chunk {k}/{of} ({n} products): {times}")


def measure(ex: Extractor, args, inputs: Inputs, model_dir) -> Outcome:
    """Warm-up, settings (sweep), then every decoder interleaved over every product."""
    budgets = model_budgets(model_dir, args.max_tokens)
    grouped = groups(inputs.products, inputs.schemas, *budgets, inputs.types)
    decoders = [d.strip() for d in args.decoders.split(",") if d.strip()]
    _cat, (_idx, docs, attrs) = next(iter(grouped.items()))
    for d in decoders:  # warm-up: first calls pay for lazy initialisation
        ex.extract(docs[:2], attrs, decoder=d, **settings_for(d, args)[0])
    load_start = os.getloadavg()
    plan, sweep = choose_settings(ex, decoders, args, inputs, budgets)
    write(
        f"interleaved on all {len(inputs.products)} products, chunks of up to {args.chunk} per category, "
        "decoders alternating:"
    )
    best, timing = run_interleaved(ex, plan, inputs.products, grouped, args.device, args.chunk, chunk_done)
    load_end = os.getloadavg()
    write(
        "best settings per decoder (products/s: median over the chunks; hpd speedup: median and "
        "min-max over the chunks of this decoder's seconds / hpd's seconds on the same products):"
    )
    results = decoder_results(ex, inputs, best, timing, grouped)
    return Outcome(best, timing, results, sweep, load_start, load_end)


def build_extractor(args) -> Extractor:
    return Extractor(
        args.model,
        device=args.device,
        dtype=args.dtype,
        attn=args.attn,
        extractive=getattr(args, "extractive", None),
        calibrate=False,  # raw confidences: what the ECE and the fit are about
        quantize=getattr(args, "quantize", None),
        typed=getattr(args, "typed", True),
        random_standin=getattr(args, "random_standin", False),
    )


def report(args, ex: Extractor, inputs: Inputs, outcome: Outcome) -> dict | None:
    """Every table and line after the measurements; -> the majority floor (ImplicitAVE) or None."""
    best, results = outcome.best, outcome.results
    best_table(results)
    floor = (
        ave.majority_floor(args.data, inputs.products) if pathlib.Path(args.data).suffix == ".tsv" else None
    )
    write_floor(floor)
    write_load(len(outcome.timing.sizes), outcome.load_start, outcome.load_end)
    write_hpd_checks(best, results)
    if inputs.normalized:
        normalized_table(inputs, best, results)
    write()
    seen_table(args, inputs.products, best, results)
    write()
    quality_table(results, ex.scalings)
    return floor


def run_evaluate(args: argparse.Namespace) -> int:
    """The evaluate command (arguments: extraction/engine/cli.py); 2 on a command line it cannot run."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.random_standin and args.model:
        sys.stderr.write("--random-standin replaces the model: name --model or ask for it, not both\n")
        return 2
    try:
        inputs = load_inputs(args)
        ex = build_extractor(args)
        fit, earlier = calibration_inputs(args, ex)
    except (UsageError, ModelMissing) as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    write_header(args, ex, inputs)
    model_dir = args.model or (None if ex.random_standin else default_model_dir())
    outcome = measure(ex, args, inputs, model_dir)
    floor = report(args, ex, inputs, outcome)
    if fit:
        write_calibration(model_dir, outcome.best, len(inputs.products), args.data, earlier, ex.extractive)
    if args.predictions:
        write_predictions(args.predictions, inputs.products, outcome.best)
    if args.json:
        write_json(args.json, results_json(args, ex, inputs, outcome, floor))
    return 0
