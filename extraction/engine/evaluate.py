"""`python -m extraction evaluate`: every decoder on the same products in one process, each at its
best settings from a short sweep; quality (metric.py) and speed side by side, then the n/a figures
(metric.py) and the calibration of value confidences (calibration.py) per decoder.

Confidences are measured raw (the Extractor is built with calibrate=False); --fit-calibration
fits one temperature per decoder on every evaluated product (plus the points of earlier --json
outputs named by --calibration-with) and stores it in the model directory's slotwise.json."""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import statistics
import sys
import threading
from dataclasses import dataclass, field, replace

from . import calibration, seen_values
from . import data as ave
from . import normalized_gold as ng
from .api import LAYOUT_CANDIDATES, AttributeSpec, Document, Extractor, default_model_dir, model_settings
from .metric import Report, is_na

SPEED_BAR = {"ar": 2.5, "pld": 3.0, "fork": 1.3}  # issue 3: HPD products/s over each baseline, best vs best
SWEEPS = {"ar": [1, 4, 16, 64], "fork": [1, 4, 16, 64], "pld": [1]}
DEFAULT_DECODERS = "ar,pld,fork,hpd"
DEFAULT_BUDGET = 12


def add_evaluate_parser(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help="run decoders on an AVE JSON-lines file, quality and speed")
    p.add_argument(
        "--data",
        required=True,
        help="JSON-lines file (oa-mine, ae-110k, wdc-pave format) or an ImplicitAVE .tsv (rows grouped by "
        "id; its attributes are enumerations from the options file of its domain)",
    )
    p.add_argument(
        "--options",
        default=None,
        metavar="FILE",
        help="options JSON (attribute -> allowed values): those attributes decode as enumerations. Default "
        "for an ImplicitAVE .tsv: the options_*.json of the folder above its domain folder that lists "
        "most of its gold values",
    )
    p.add_argument(
        "--gold",
        choices=["extracted", "normalized"],
        default="extracted",
        help="normalized: score WDC-PAVE against its normalized gold (train_normalized.jsonl beside "
        "train.jsonl; either may be --data): numeric attributes decode as numbers in the gold's unit "
        "and compare as numbers, attributes whose normalized gold is rarely a span decode as free text; "
        "prints the F1 against the extracted gold beside it",
    )
    p.add_argument(
        "--typed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="constrain values by their attribute's type (enumerations: one of the allowed values); "
        "--no-typed decodes every attribute as text (the control)",
    )
    p.add_argument("--model", default=None, help="model directory (default: bundled, else random stand-in)")
    p.add_argument("--decoders", default=DEFAULT_DECODERS, help="comma list of ar,pld,fork,hpd")
    p.add_argument("--limit", type=int, default=None, help="first N products only")
    p.add_argument(
        "--sample",
        type=int,
        default=None,
        help="N products taken evenly over the file (every category its share; after --limit)",
    )
    p.add_argument("--stack", type=int, default=None, help="force HPD stacking J (no sweep over J)")
    p.add_argument("--rows", type=int, default=None, help="force HPD rows per forward")
    p.add_argument("--batch", type=int, default=None, help="force AR / fork batch size (no sweep)")
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="token budget (gap) per attribute (default: the model's slotwise.json, else 12)",
    )
    p.add_argument(
        "--chunk",
        type=int,
        default=32,
        help="products per interleaved chunk: every decoder runs on each chunk in turn (A B, B A, ...)",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument(
        "--dtype", default=None, help="float32 / bfloat16 (default: float32 on cpu, bfloat16 on cuda)"
    )
    p.add_argument("--attn", default="sdpa", help="sdpa or eager")
    p.add_argument("--quantize", default=None, choices=["int8"], help="int8: dynamic int8 quantization (CPU)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--sweep-limit",
        type=int,
        default=48,
        help="products (spread over the file) the settings sweep runs on; the best settings then run "
        "on every product (0: sweep on every product)",
    )
    p.add_argument(
        "--extractive",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="constrain every value to a substring of its document or n/a (hpd, fork, ar; pld stays "
        "unconstrained). Default: as the model's slotwise.json says (on for the bundled model)",
    )
    p.add_argument(
        "--train-data",
        default=None,
        metavar="DIR",
        help="data set folder whose training split tells seen from unseen gold values (default: the "
        "dev file's own folder, or the AVE folder of a stored <set>-dev.jsonl split)",
    )
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument(
        "--predictions",
        default=None,
        metavar="JSONL",
        help="write every product's gold and predicted values (best settings of each decoder) here",
    )
    p.add_argument(
        "--fit-calibration",
        action="store_true",
        help="fit one confidence temperature per decoder on every evaluated product and write it to "
        'the model directory\'s slotwise.json ("calibration"; other keys kept)',
    )
    p.add_argument(
        "--calibration-with",
        action="append",
        default=[],
        metavar="JSON",
        help="with --fit-calibration: also fit on the confidence points of an earlier --json output of "
        "the same model (another data set); repeatable",
    )
    p.set_defaults(func=run_evaluate)


# ---------------------------------------------------------------------------------- measuring


class PeakMemory:
    """Peak memory during a run: CUDA allocator peak, or the process RSS sampled every 5 ms on CPU."""

    def __init__(self, device: str):
        self.cuda = str(device).startswith("cuda")
        self.peak = 0.0
        self._stop = threading.Event()

    @staticmethod
    def rss_mb() -> float:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except OSError:
            return 0.0

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.rss_mb())

    def __enter__(self):
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
        else:
            self.peak = self.rss_mb()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            import torch

            self.peak = torch.cuda.max_memory_allocated() / 2**20
        else:
            self._stop.set()
            self._thread.join()


@dataclass
class Run:
    decoder: str
    setting: dict
    seconds: float = 0.0
    forward_steps: int = 0
    tokens_decoded: int = 0
    peak_memory_mb: float = 0.0
    max_value_steps: int = 0
    longest_value: int = 0  # tokens of the longest value decoded
    layouts: list[str] = field(default_factory=list)
    report: Report | None = None
    # (product index, raw confidence, correct) of every value (non-n/a prediction) on a judged pair
    points: list[tuple[int, float, bool]] = field(default_factory=list)
    predictions: list[dict] = field(default_factory=list)  # per product: attribute -> ValueResult

    def products_per_second(self, n: int) -> float:
        return n / self.seconds if self.seconds else 0.0


def budgets(model_dir, max_tokens: int | None) -> tuple[dict[str, int], int]:
    """Token budget per attribute: the model dir's slotwise.json (attribute_budgets, default_budget),
    else 12; --max-tokens overrides the default."""
    path = pathlib.Path(model_dir) / "slotwise.json" if model_dir else None
    conf = json.loads(path.read_text()) if path and path.is_file() else {}
    default = max_tokens or int(conf.get("default_budget", DEFAULT_BUDGET))
    return {k: int(v) for k, v in conf.get("attribute_budgets", {}).items()}, default


@dataclass
class Types:
    """The attribute types evaluate decodes with: enumerations (attribute -> allowed values, from an
    options file) and whether their n/a is allowed (not on ImplicitAVE, whose every pair has a value:
    its micro F1 is then its accuracy)."""

    enums: dict[str, list[str]] = field(default_factory=dict)
    na: bool = True
    source: str | None = None  # the options file
    numbers: dict[str, str] = field(default_factory=dict)  # attribute -> unit (--gold normalized)
    free: set[str] = field(default_factory=set)  # text attributes decoded free (--gold normalized)

    def spec(self, name: str, max_tokens: int) -> AttributeSpec:
        if name in self.enums:
            return AttributeSpec(
                name, "", max_tokens, kind="enum", allowed_values=tuple(self.enums[name]), na=self.na
            )
        if name in self.numbers:
            return AttributeSpec(name, "", max_tokens, kind="number", unit=self.numbers[name])
        return AttributeSpec(name, "", max_tokens, free=name in self.free)


def attribute_types(args, products: list[ave.Product]) -> Types:
    """--options, else an ImplicitAVE file's own options file; none for the other sets."""
    implicit = pathlib.Path(args.data).suffix == ".tsv"
    path = getattr(args, "options", None)
    if path is None and implicit:
        path = ave.options_for(args.data, products)
        if path is None:
            raise ValueError(f"{args.data}: no options_*.json in the folder above it (--options FILE)")
    if path is None:
        return Types()
    return Types(ave.load_options(path), na=not implicit, source=str(path))


def with_gold(products: list[ave.Product], other: list[ave.Product]) -> list[ave.Product]:
    """The products with the gold of the same keys in other (the extracted gold of normalized
    products); a key other lacks has no gold there."""
    by_key = {p.key: p.gold for p in other}
    return [ave.Product(p.key, p.category, p.text, by_key.get(p.key, {})) for p in products]


def score_normalized(run: Run, products, extracted, schemas) -> Report:
    """Score a run against the normalized gold (its numbers compared as numbers, normalized_gold.py)
    in place, and -> its report against the extracted gold (on the text as decoded, before a number
    took the gold's unit)."""
    canon = [
        {a: replace(v, text=ng.canonical(a, v.text)) for a, v in pred.items()} for pred in run.predictions
    ]
    run.report, run.points = score(ng.canonical_products(products), canon, schemas)
    raw = [{a: replace(v, text=v.raw or v.text) for a, v in pred.items()} for pred in run.predictions]
    return score(extracted, raw, schemas)[0]


def groups(
    products: list[ave.Product],
    schemas: dict[str, list[str]],
    per_attr: dict[str, int],
    default: int,
    types: Types | None = None,
):
    """category -> (indices, documents, attributes)."""
    types = types or Types()
    out = {}
    for cat, idx in ave.by_category(products).items():
        docs = [Document(products[i].key, products[i].text) for i in idx]
        out[cat] = (idx, docs, [types.spec(a, per_attr.get(a, default)) for a in schemas[cat]])
    return out


def add_result(run: Run, idx, res, stats) -> None:
    """Fold one extract call (products idx, in order) into a run."""
    run.seconds += stats.seconds
    run.forward_steps += stats.forward_steps
    run.tokens_decoded += stats.tokens_decoded
    run.max_value_steps = max(run.max_value_steps, stats.max_value_steps)
    run.layouts.append(stats.layout)
    for i, r in zip(idx, res, strict=True):
        run.predictions[i] = r
        run.longest_value = max([run.longest_value] + [v.steps - 1 for v in r.values()])


def finish(run: Run, products, grouped) -> Run:
    run.report, run.points = score(
        products, run.predictions, {cat: [a.name for a in g[2]] for cat, g in grouped.items()}
    )
    return run


def run_once(ex: Extractor, decoder: str, setting: dict, products, grouped, device: str) -> Run:
    run = Run(decoder, setting, predictions=[{} for _ in products])
    ex.clear_prefix_cache()  # each run pays its own prefix prefills (once per category)
    with PeakMemory(device) as mem:
        for idx, docs, attrs in grouped.values():
            res, stats = ex.extract(docs, attrs, decoder=decoder, **setting)
            add_result(run, idx, res, stats)
    run.peak_memory_mb = mem.peak
    return finish(run, products, grouped)


def chunks(grouped, size: int):
    """(indices, documents, attributes) pieces of at most size products, within one category."""
    for idx, docs, attrs in grouped.values():
        for start in range(0, len(idx), size):
            yield idx[start : start + size], docs[start : start + size], attrs


@dataclass
class Interleaved:
    """Seconds of every decoder on the same chunk of products, chunk after chunk."""

    sizes: list[int] = field(default_factory=list)  # products per chunk
    seconds: list[dict[str, float]] = field(default_factory=list)  # chunk -> decoder -> seconds

    def median_products_per_second(self, decoder: str) -> float:
        rates = [n / t[decoder] for n, t in zip(self.sizes, self.seconds, strict=True) if t[decoder]]
        return statistics.median(rates) if rates else 0.0

    def ratios(self, fast: str, slow: str) -> list[float]:
        """Per chunk: slow's seconds / fast's seconds (how many times faster fast was)."""
        return [t[slow] / t[fast] for t in self.seconds if t[fast]]


def run_interleaved(ex: Extractor, plan: dict[str, dict], products, grouped, device: str, size: int):
    """Every decoder at its settings over every product, in chunks of `size` products: A B, B A,
    A B ... on each chunk, so that load on a shared machine lands on all decoders alike. The prefix
    caches are cleared once: each pays its prefills once per category, as in a long run."""
    runs = {d: Run(d, s, predictions=[{} for _ in products]) for d, s in plan.items()}
    timing = Interleaved()
    ex.clear_prefix_cache()
    order = list(plan)
    for k, (idx, docs, attrs) in enumerate(chunks(grouped, size)):
        seconds = {}
        for d in order if k % 2 == 0 else order[::-1]:
            with PeakMemory(device) as mem:
                res, stats = ex.extract(docs, attrs, decoder=d, **plan[d])
            add_result(runs[d], idx, res, stats)
            runs[d].peak_memory_mb = max(runs[d].peak_memory_mb, mem.peak)
            seconds[d] = stats.seconds
        timing.sizes.append(len(idx))
        timing.seconds.append(seconds)
    return {d: finish(r, products, grouped) for d, r in runs.items()}, timing


def score(products, preds: list[dict], schemas: dict[str, list[str]]) -> tuple[Report, list]:
    """The metric over judged pairs, the unjudged schema attributes apart, and the calibration points
    (product index, confidence, correct iff VC) of the values predicted on judged pairs."""
    report = Report()
    points = []
    for i, (p, pred) in enumerate(zip(products, preds, strict=True)):
        for attr, gold in p.gold.items():
            v = pred.get(attr)
            kind = report.add(p.category, attr, v.text if v else None, gold)
            if v is not None and not is_na(v.text):
                points.append((i, float(v.confidence), kind == "VC"))
        for attr in schemas.get(p.category, []):
            if attr not in p.gold:
                v = pred.get(attr)
                report.add_unjudged(p.category, attr, v.text if v else None)
    return report, points


def spread(products: list, limit: int) -> list:
    """Up to limit products taken evenly over the list (every category gets its share)."""
    if not limit or limit >= len(products):
        return products
    step = len(products) / limit
    return [products[int(i * step)] for i in range(limit)]


def settings_for(decoder: str, args) -> list[dict]:
    if decoder == "hpd":
        if args.stack is not None or args.rows is not None:
            return [{"stack": args.stack or 1, "rows": args.rows}]
        return [{"stack": j, "rows": r} for j, r in LAYOUT_CANDIDATES] + [{}]  # {} = the engine's own choice
    if args.batch is not None:
        return [{"batch": args.batch}]
    return [{"batch": b} for b in SWEEPS[decoder]]


def setting_text(s: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in s.items() if v is not None) or "auto"


# ---------------------------------------------------------------------------------- output


def write(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def table(rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, r in enumerate(rows):
        write(
            "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        )
        if k == 0:
            write("  ".join("-" * w for w in widths))


def summary(run: Run, n: int, stored_temperature: float | None = None) -> dict:
    m = run.report.micro
    judged = m.pairs
    groups, confs, correct = zip(*run.points, strict=True) if run.points else ((), (), ())
    return {
        "f1": m.f1,
        "accuracy": m.VC / judged if judged else 0.0,  # VC share of the judged pairs
        "precision": m.precision,
        "recall": m.recall,
        "NV": m.NV,
        "gold_na": m.gold_na,
        "na_accuracy": m.na_accuracy,
        "na_precision": m.na_precision,
        "unjudged": m.unjudged,
        "unjudged_valued": m.unjudged_valued,
        "unjudged_value_share": m.unjudged_value_share,
        "calibration": calibration.summary(confs, correct, groups, stored_temperature),
        "products_per_second": run.products_per_second(n),
        "seconds": run.seconds,
        "forward_steps": run.forward_steps,
        "tokens_per_step": run.tokens_decoded / run.forward_steps if run.forward_steps else 0.0,
        "peak_memory_mb": run.peak_memory_mb,
        "settings": setting_text(run.setting),
        "layouts": sorted(set(run.layouts)),
        "tokens_decoded": run.tokens_decoded,
        "longest_decode_steps": run.max_value_steps,
        "longest_value_tokens": run.longest_value,
    }


DEFINITIONS = {
    "NV": "values predicted where gold is n/a",
    "gold_na": "judged pairs whose gold is n/a (NV + NN)",
    "na_accuracy": "NN / (NN + NV): share of the gold-n/a pairs predicted n/a",
    "na_precision": "NN / (NN + VN): share of the judged n/a predictions whose gold is n/a",
    "unjudged": "schema attributes of a product's category that its record does not list (no gold)",
    "unjudged_value_share": "share of the unjudged pairs given a value (not n/a)",
    "ece": "expected calibration error, 10 equal-width bins, over the values (non-n/a predictions) "
    "on judged pairs; correct iff VC",
    "ece_cross_fitted": "ECE after sigmoid(logit(c) / T), T fitted by NLL on the other half of the "
    "products (2 folds by product index parity), pooled over both halves",
    "temperature": "T fitted on every evaluated product (what --fit-calibration writes)",
}


def ratio_summary(ratios: list[float]) -> dict | None:
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "pairs": len(ratios)}


def fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def quality_table(results: dict[str, dict], stored: dict[str, float]) -> None:
    """n/a figures and calibration per decoder (definitions: DEFINITIONS, metric.py, calibration.py)."""
    write("n/a and confidence calibration per decoder (values = non-n/a predictions on judged pairs):")
    head = ["decoder", "F1", "NV", "gold n/a", "n/a acc", "n/a P", "unjudged", "unj valued"]
    head += ["values", "value acc", "ECE raw", "ECE cal 2-fold", "T fit"]
    has_stored = any(d in stored for d in results)
    if has_stored:
        head += ["T stored", "ECE stored"]
    rows = [head]
    for d, sm in results.items():
        cal = sm["calibration"]
        row = [
            d,
            f"{sm['f1']:.3f}",
            str(sm["NV"]),
            str(sm["gold_na"]),
            fmt(sm["na_accuracy"]),
            fmt(sm["na_precision"]),
            str(sm["unjudged"]),
            fmt(sm["unjudged_value_share"]),
            str(cal["points"]),
            fmt(cal["accuracy"]),
            fmt(cal["ece_raw"]),
            fmt(cal["ece_cross_fitted"]),
            f"{cal['temperature']:.3f}",
        ]
        if has_stored:
            row += [fmt(cal.get("stored_temperature")), fmt(cal.get("ece_stored"))]
        rows.append(row)
    table(rows)
    write(
        "n/a acc = NN/(NN+NV) of gold n/a; n/a P = NN/(NN+VN); unj valued = share of unjudged schema "
        "attributes given a value; ECE: 10 bins, correct iff VC; cal: sigmoid(logit(c)/T), T by NLL on "
        "the other half of the products"
    )


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
            write(f"  {d:5s} {label:34s} {sm['products_per_second']:8.2f} products/s  F1 {sm['f1']:.3f}")
            runs.append(run)
        plan[d] = min(runs, key=lambda r: r.seconds).setting
    return plan


def seen_table(args, products, best: dict[str, Run], results: dict[str, dict]) -> None:
    """Accuracy on gold values seen in training against unseen ones (seen_values.py), per decoder."""
    folder = pathlib.Path(args.train_data) if args.train_data else seen_values.training_dir_for(args.data)
    if folder is None:
        write("seen/unseen values: no training split known for this file (--train-data DIR)")
        return
    known = seen_values.training_values(folder)
    rows = [["decoder", "seen pairs", "seen acc", "unseen pairs", "unseen acc"]]
    for d, run in best.items():
        texts = [{a: v.text for a, v in pred.items()} for pred in run.predictions]
        split = seen_values.seen_split(products, texts, known)
        results[d]["seen_values"] = split.to_dict()
        rows.append(
            [d, str(split.seen), fmt(split.seen_accuracy), str(split.unseen), fmt(split.unseen_accuracy)]
        )
    write(f"gold values seen / never seen in the training split of {folder} (acc = VC share):")
    table(rows)


def pooled_points(path: str, model_name: str, extractive: bool) -> dict:
    """An earlier --json output's calibration points, checked to be of this model and decoding mode."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if "calibration_points" not in data:
        raise ValueError(f"{path}: no calibration_points (written by an older evaluate?)")
    if data.get("model") != model_name or bool(data.get("extractive")) != bool(extractive):
        raise ValueError(
            f"{path}: model {data.get('model')!r} extractive={data.get('extractive')} does not match "
            f"{model_name!r} extractive={extractive}"
        )
    return data


def data_name(path: str) -> str:
    p = pathlib.Path(path)
    return f"{p.parent.name}/{p.name}"


def write_calibration(model_dir, best: dict[str, Run], n: int, data: str, earlier, extractive):
    """Fit T per decoder on this run's points and the pooled ones; store it in slotwise.json."""
    path = pathlib.Path(model_dir) / "slotwise.json"
    conf = model_settings(model_dir)
    block: dict = {}
    points: dict[str, int] = {}
    curves: dict[str, list] = {}
    for d, run in best.items():
        confs = [c for _, c, _ in run.points]
        correct = [y for _, _, y in run.points]
        for e in earlier:
            for c, y in e["calibration_points"].get(d, []):
                confs.append(float(c))
                correct.append(bool(y))
        block[d] = round(calibration.fit_temperature(confs, correct), 6)
        points[d] = len(confs)
        curves[d] = calibration.precision_curve(confs, correct, block[d])
    block.update(
        {
            "extractive": bool(extractive),
            "products": n + sum(int(e.get("products", 0)) for e in earlier),
            "data": [data_name(data)] + [data_name(e.get("data", "?")) for e in earlier],
            "points": points,
            "fit": "sigmoid(logit(c) / T), T by NLL over values on judged pairs (correct iff VC)",
            # per decoder: [threshold, precision, values, Wilson 95% low, high] over the same values,
            # confidences calibrated with that T (calibration.precision_curve)
            "precision_curve": curves,
        }
    )
    conf["calibration"] = block
    path.write_text(json.dumps(conf, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    temps = ", ".join(f"{d} T={block[d]:.3f} ({points[d]} values)" for d in best)
    write(f"calibration written to {path}: {temps}; data {', '.join(block['data'])}")


def write_predictions(path: str, products, best: dict[str, Run]) -> None:
    """One JSON line per product: key, category, gold forms, and per decoder value + confidence."""
    with open(path, "w", encoding="utf-8") as f:
        for i, p in enumerate(products):
            line = {"key": p.key, "category": p.category, "gold": p.gold}
            for d, run in best.items():
                line[d] = {a: [v.text, round(v.confidence, 4)] for a, v in run.predictions[i].items()}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


def run_evaluate(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    normalized = getattr(args, "gold", "extracted") == "normalized"
    extracted_path, normalized_path = ng.paths(args.data)
    if normalized and not (extracted_path.is_file() and normalized_path.is_file()):
        sys.stderr.write(f"--gold normalized needs {extracted_path} and {normalized_path}\n")
        return 2
    everything = ave.load(normalized_path if normalized else args.data)
    schemas = ave.schemas(everything)  # schema = union over the whole file
    products = everything[: args.limit] if args.limit else everything
    products = spread(products, getattr(args, "sample", None) or 0)
    try:
        types = attribute_types(args, everything)
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    extracted_gold = None
    if normalized:
        extracted_gold = with_gold(products, ave.load(extracted_path))
        types.numbers = {a: unit for a, (unit, _) in ng.NUMBERS.items()}
        types.free = ng.free_attributes(everything)
    ex = Extractor(
        args.model,
        device=args.device,
        dtype=args.dtype,
        attn=args.attn,
        extractive=getattr(args, "extractive", None),
        calibrate=False,  # raw confidences: what the ECE and the fit are about
        quantize=getattr(args, "quantize", None),
        typed=getattr(args, "typed", True),
    )
    fit = getattr(args, "fit_calibration", False)
    pooled = getattr(args, "calibration_with", None) or []
    if pooled and not fit:
        sys.stderr.write("--calibration-with needs --fit-calibration\n")
        return 2
    if fit and ex.random_standin:
        sys.stderr.write("--fit-calibration needs a model directory (got the random stand-in)\n")
        return 2
    try:
        earlier = [pooled_points(path, ex.model_name, ex.extractive) for path in pooled]
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    extractive = ex.extractive
    model_text = f"{ex.model_name} ({ex.model_revision})"
    if ex.random_standin:
        model_text += " RANDOM STAND-IN: bundled model not found, outputs are noise, speed only"
    write(f"model: {model_text}")
    write(f"data: {args.data}  products: {len(products)}  categories: {len(ave.by_category(products))}")
    if extractive:
        write(
            "extractive: values are substrings of their document or n/a (pld unconstrained; --no-extractive: free)"
        )
    else:
        write("extractive: off (free greedy values)")
    if types.enums:
        state = "on" if ex.typed else "OFF (--no-typed: decoded as text)"
        na = "n/a allowed" if types.na else "no n/a (every pair has a value: micro F1 = accuracy)"
        write(f"enumerations {state}: {len(types.enums)} attributes from {types.source}, {na}")
    model_dir = args.model or (None if ex.random_standin else default_model_dir())
    grouped = groups(products, schemas, *budgets(model_dir, args.max_tokens), types)
    decoders = [d.strip() for d in args.decoders.split(",") if d.strip()]
    cat, (idx, docs, attrs) = next(iter(grouped.items()))
    for d in decoders:  # warm-up: first calls pay for lazy initialisation
        ex.extract(docs[:2], attrs, decoder=d, **settings_for(d, args)[0])
    load_start = os.getloadavg()
    n = len(products)
    plan = {d: settings_for(d, args)[0] for d in decoders}
    sweep = [["decoder", "settings", "products/s", "seconds", "F1", "fwd steps", "tok/step", "peak MB"]]
    if any(len(settings_for(d, args)) > 1 for d in decoders):
        sample = spread(products, args.sweep_limit)
        write(f"sweep on {len(sample)} products (one decoder after the other; it only picks settings):")
        plan = run_sweep(
            ex,
            decoders,
            args,
            sample,
            groups(sample, schemas, *budgets(model_dir, args.max_tokens), types),
            sweep,
        )
        write()
        write("sweep:")
        table(sweep)
        write()
    write(
        f"interleaved on all {n} products, chunks of up to {args.chunk} per category, decoders alternating:"
    )
    best, timing = run_interleaved(ex, plan, products, grouped, args.device, args.chunk)
    load_end = os.getloadavg()
    write(
        "best settings per decoder (products/s: median over the chunks; hpd speedup: median and "
        "min-max over the chunks of this decoder's seconds / hpd's seconds on the same products):"
    )
    score_schemas = {cat: [a.name for a in g[2]] for cat, g in grouped.items()}
    extracted_reports = {
        d: score_normalized(r, products, extracted_gold, score_schemas) for d, r in best.items() if normalized
    }
    results = {d: summary(r, n, ex.temperatures.get(d)) for d, r in best.items()}
    for d, rep in extracted_reports.items():
        m = rep.micro
        results[d]["gold"] = "normalized"
        results[d]["extracted_gold"] = {"f1": m.f1, "precision": m.precision, "recall": m.recall}
    for d, sm in results.items():
        sm["median_products_per_second"] = timing.median_products_per_second(d)
        if "hpd" in best and d != "hpd":
            sm["hpd_ratio"] = ratio_summary(timing.ratios("hpd", d))
    head = ["decoder", "settings", "products/s", "seconds", "F1", "P", "R", "fwd steps", "tok/step"]
    rows = [head + ["peak MB", "hpd speedup"]]
    for d, sm in results.items():
        r = sm.get("hpd_ratio")
        speed = f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})" if r else "-"
        rows.append(
            [
                d,
                sm["settings"],
                f"{sm['median_products_per_second']:.2f}",
                f"{sm['seconds']:.2f}",
                f"{sm['f1']:.3f}",
                f"{sm['precision']:.3f}",
                f"{sm['recall']:.3f}",
                str(sm["forward_steps"]),
                f"{sm['tokens_per_step']:.1f}",
                f"{sm['peak_memory_mb']:.0f}",
                speed,
            ]
        )
    table(rows)
    floor = ave.majority_floor(args.data, products) if pathlib.Path(args.data).suffix == ".tsv" else None
    if floor is not None:
        write(
            f"floor: the majority value of each attribute in {floor['source']} scores accuracy "
            f"{floor['accuracy']:.3f} on the same {floor['pairs']} pairs"
        )
    write(
        f"chunks: {len(timing.sizes)}; load average (1, 5, 15 min) at start "
        f"{' '.join(f'{x:.2f}' for x in load_start)}, at end {' '.join(f'{x:.2f}' for x in load_end)}"
    )
    if "hpd" in best:
        h = best["hpd"]
        ok = "ok" if h.max_value_steps <= h.longest_value else "EXCEEDED"
        write(
            f"hpd: forward steps per stacked prompt <= {h.max_value_steps} decode + 1 prefill; longest decoded "
            f"value {h.longest_value} tokens: {ok}; layouts {','.join(sorted(set(h.layouts)))}"
        )
        for d, bar in SPEED_BAR.items():
            if d in results and results[d].get("hpd_ratio"):
                ratio = results[d]["hpd_ratio"]["median"]
                write(
                    f"speed bar hpd/{d}: {ratio:.2f}x median (bar {bar}x) {'ok' if ratio >= bar else 'BELOW'}"
                )
    if normalized:
        write(
            f"gold: normalized ({normalized_path.name}; numbers {', '.join(sorted(types.numbers))} compared as "
            f"numbers; free text: {', '.join(sorted(types.free)) or 'none'}); F1 against the extracted gold "
            f"({extracted_path.name}) on the text as decoded:"
        )
        table(
            [["decoder", "F1 normalized", "F1 extracted"]]
            + [[d, f"{results[d]['f1']:.3f}", f"{results[d]['extracted_gold']['f1']:.3f}"] for d in best]
        )
    write()
    seen_table(args, products, best, results)
    write()
    quality_table(results, ex.temperatures)
    if fit:
        write_calibration(model_dir, best, n, args.data, earlier, extractive)
    if args.predictions:
        write_predictions(args.predictions, products, best)
    if args.json:
        out = {
            "model": ex.model_name,
            "model_revision": ex.model_revision,
            "random_standin": ex.random_standin,
            "extractive": extractive,
            "typed": ex.typed,
            "gold": "normalized" if normalized else "extracted",
            "numbers": sorted(types.numbers),
            "free_text": sorted(types.free),
            "options": types.source,
            "enumerations": sorted(types.enums),
            "na_allowed_in_enumerations": types.na,
            "data": str(args.data),
            "products": n,
            "majority_floor": floor,
            "load_average": {"start": list(load_start), "end": list(load_end)},
            "chunks": [
                {"products": k, "seconds": t} for k, t in zip(timing.sizes, timing.seconds, strict=True)
            ],
            "decoders": results,
            "sweep": [dict(zip(sweep[0], r, strict=True)) for r in sweep[1:]],
            "per_attribute": {d: r.report.to_dict()["per_attribute"] for d, r in best.items()},
            "per_category": {d: r.report.to_dict()["per_category"] for d, r in best.items()},
            "definitions": DEFINITIONS,
            # raw (confidence, correct) of the values on judged pairs: --calibration-with pools them
            "calibration_points": {
                d: [[round(c, 6), int(y)] for _, c, y in r.points] for d, r in best.items()
            },
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2)
        write(f"wrote {args.json}")
    return 0
