"""Running decoders for evaluate: the products' types and groups, one run or every decoder
interleaved chunk by chunk, peak memory, and the metric and calibration points of a run."""

from __future__ import annotations

import os
import pathlib
import statistics
import threading
from dataclasses import dataclass, field, replace

from catalog.kinds import ENUM, NUMBER
from extraction.engine import data as ave
from extraction.engine import normalized_gold as ng
from extraction.engine.api import LAYOUT_CANDIDATES, AttributeSpec, Document, Extractor
from extraction.engine.metric import Report, is_na

SWEEPS = {
    "ar": [1, 4, 16, 64],
    # finished rows leave its batch and its head is a few rows a token: larger batches may pay
    "ar-honest": [1, 4, 16, 64, 128],
    "ar-honest-static": [1, 4, 16, 64, 128],
    "ar-uncached": [1, 4, 16, 64],
    "fork": [1, 4, 16, 64],
    "pld": [1],
}  # batch sizes each baseline tries


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
    # (product index, raw confidence, correct iff gold n/a) of every n/a prediction on a judged pair
    na_points: list[tuple[int, float, bool]] = field(default_factory=list)
    predictions: list[dict] = field(default_factory=list)  # per product: attribute -> ValueResult

    def products_per_second(self, n: int) -> float:
        return n / self.seconds if self.seconds else 0.0


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
    # category -> attribute -> values: enumerations of one category (--gold normalized's closed lists)
    category_enums: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # category -> attribute -> its description in the prompt (--gold normalized's text instructions)
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def enum_names(self) -> set[str]:
        """Every attribute decoded as an enumeration (in some category)."""
        return set(self.enums) | {a for attrs in self.category_enums.values() for a in attrs}

    def spec(self, name: str, max_tokens: int, category: str = "") -> AttributeSpec:
        values = self.category_enums.get(category, {}).get(name) or self.enums.get(name)
        if values:
            return AttributeSpec(name, "", max_tokens, kind=ENUM, allowed_values=tuple(values), na=self.na)
        if name in self.numbers:
            return AttributeSpec(name, "", max_tokens, kind=NUMBER, unit=self.numbers[name])
        description = self.descriptions.get(category, {}).get(name, "")
        return AttributeSpec(name, description, max_tokens, free=name in self.free)


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
    run.report, run.points, run.na_points = score(ng.canonical_products(products), canon, schemas)
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
        out[cat] = (idx, docs, [types.spec(a, per_attr.get(a, default), cat) for a in schemas[cat]])
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
    run.report, run.points, run.na_points = score(
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


def run_interleaved(
    ex: Extractor, plan: dict[str, dict], products, grouped, device: str, size: int, on_chunk=None
):
    """Every decoder at its settings over every product, in chunks of `size` products: A B, B A,
    A B ... on each chunk, so that load on a shared machine lands on all decoders alike. The prefix
    caches are cleared once: each pays its prefills once per category, as in a long run.
    on_chunk(k, of, products, seconds) is called after each chunk (progress, for long runs)."""
    runs = {d: Run(d, s, predictions=[{} for _ in products]) for d, s in plan.items()}
    timing = Interleaved()
    ex.clear_prefix_cache()
    order = list(plan)
    pieces = list(chunks(grouped, size))
    for k, (idx, docs, attrs) in enumerate(pieces):
        seconds = {}
        for d in order if k % 2 == 0 else order[::-1]:
            with PeakMemory(device) as mem:
                res, stats = ex.extract(docs, attrs, decoder=d, **plan[d])
            add_result(runs[d], idx, res, stats)
            runs[d].peak_memory_mb = max(runs[d].peak_memory_mb, mem.peak)
            seconds[d] = stats.seconds
        timing.sizes.append(len(idx))
        timing.seconds.append(seconds)
        if on_chunk is not None:
            on_chunk(k + 1, len(pieces), len(idx), seconds)
    return {d: finish(r, products, grouped) for d, r in runs.items()}, timing


def score(products, preds: list[dict], schemas: dict[str, list[str]]) -> tuple[Report, list, list]:
    """The metric over judged pairs, the unjudged schema attributes apart, and the calibration points
    (product index, confidence, correct) of the values predicted on judged pairs (correct iff VC) and
    of the n/a predicted on them (correct iff NN)."""
    report = Report()
    points, na_points = [], []
    for i, (p, pred) in enumerate(zip(products, preds, strict=True)):
        for attr, gold in p.gold.items():
            v = pred.get(attr)
            kind = report.add(p.category, attr, v.text if v else None, gold)
            if v is not None and not is_na(v.text):
                points.append((i, float(v.confidence), kind == "VC"))
            elif v is not None:
                na_points.append((i, float(v.confidence), kind == "NN"))
        for attr in schemas.get(p.category, []):
            if attr not in p.gold:
                v = pred.get(attr)
                report.add_unjudged(p.category, attr, v.text if v else None)
    return report, points, na_points


def spread(products: list, limit: int) -> list:
    """Up to limit products taken evenly over the list (every category gets its share)."""
    if not limit or limit >= len(products):
        return products
    step = len(products) / limit
    return [products[int(i * step)] for i in range(limit)]


def sweep_sample(products: list, limit: int, chunk: int) -> list:
    """Up to limit products as whole chunks of the main run (up to chunk products of one category
    each), from categories taken evenly over the file. The batch sizes and layouts a sweep compares
    must be ones the main run can use: spread over every category, 48 products gave about 5 a
    category, where a batch of 16 and one of 64 are the same calls, so the sweep picked between
    them by noise."""
    if not limit or limit >= len(products):
        return products
    cats = list(ave.by_category(products).values())
    n_cats = min(len(cats), -(-limit // chunk))  # as few categories as the limit allows
    picked = [cats[int(k * len(cats) / n_cats)] for k in range(n_cats)]
    per_cat = -(-limit // n_cats)
    return [products[i] for idx in picked for i in idx[: min(chunk, per_cat)]][:limit]


def settings_for(decoder: str, args) -> list[dict]:
    if decoder in ("hpd", "hpd-dense"):
        if args.stack is not None or args.rows is not None:
            return [{"stack": args.stack or 1, "rows": args.rows}]
        return [{"stack": j, "rows": r} for j, r in LAYOUT_CANDIDATES] + [{}]  # {} = the engine's own choice
    if args.batch is not None:
        return [{"batch": args.batch}]
    return [{"batch": b} for b in SWEEPS[decoder]]


def setting_text(s: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in s.items() if v is not None) or "auto"


class UsageError(ValueError):
    """A command line evaluate cannot run: its message goes to stderr and the command exits 2."""


@dataclass
class Inputs:
    """The products evaluate decodes, their schemas and types, and the gold they are scored on."""

    everything: list[ave.Product]  # every product of the file (the schemas are their union)
    schemas: dict[str, list[str]]
    products: list[ave.Product]  # those evaluated (--limit, --sample)
    types: Types
    normalized: bool  # --gold normalized: scored on the normalized gold, extracted_gold beside it
    extracted_path: pathlib.Path
    normalized_path: pathlib.Path
    extracted_gold: list[ave.Product] | None = None


def only_categories(products: list[ave.Product], wanted: str | None, source) -> list[ave.Product]:
    """The products of the comma-listed categories (all when None); UsageError naming any category
    the file does not have."""
    if not wanted:
        return products
    names = [c.strip() for c in wanted.split(",") if c.strip()]
    known = set(ave.by_category(products))
    unknown = [c for c in names if c not in known]
    if unknown:
        raise UsageError(
            f"--categories: {', '.join(unknown)} not in {source} (its categories: {', '.join(sorted(known))})"
        )
    return [p for p in products if p.category in set(names)]


def load_inputs(args) -> Inputs:
    """The data file as the command line asks (UsageError: files or options missing)."""
    normalized = getattr(args, "gold", "extracted") == "normalized"
    extracted_path, normalized_path = ng.paths(args.data)
    if normalized and not (extracted_path.is_file() and normalized_path.is_file()):
        raise UsageError(f"--gold normalized needs {extracted_path} and {normalized_path}")
    everything = ave.load(normalized_path if normalized else args.data)
    schemas = ave.schemas(everything)  # schema = union over the whole file
    products = only_categories(everything, getattr(args, "categories", None), args.data)
    products = products[: args.limit] if args.limit else products
    products = spread(products, getattr(args, "sample", None) or 0)
    try:
        types = attribute_types(args, everything)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    inputs = Inputs(everything, schemas, products, types, normalized, extracted_path, normalized_path)
    if normalized:
        inputs.extracted_gold = with_gold(products, ave.load(extracted_path))
        types.numbers = {a: unit for a, (unit, _) in ng.NUMBERS.items()}
        lists, told = ng.options_path(normalized_path), ng.instructions_path(normalized_path)
        if lists.is_file():  # written with the WDC-PAVE dev split (splits.load_split)
            types.category_enums = ng.load_per_category(lists)
            types.source = str(lists)
        if told.is_file():
            types.descriptions = ng.load_per_category(told)
        types.free = ng.free_attributes(everything) - types.enum_names
    return inputs
