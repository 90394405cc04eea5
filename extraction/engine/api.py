"""The engine's public API: load a model once, extract attribute values from documents.

Importing this module imports neither Django nor torch (torch is loaded by Extractor()), so the web
process may use the dataclasses; workers construct an Extractor once per process.

    ex = Extractor()                                   # the default model (`make model`)
    results, stats = ex.extract([Document("sku1", "Diesel Men's Sneaker")],
                                [AttributeSpec("Brand"), AttributeSpec("Color", "main colour", 6)])
    results[0]["Brand"].text, .confidence, .steps, .truncated

Confidences are calibrated when the model directory's slotwise.json has a "calibration" block
(`evaluate --fit-calibration` or `calibrate` writes it): confidence = sigmoid(a * logit(raw) + b),
one (a, b) per decoder for values and one for "n/a" (an older file's temperature T reads as a = 1/T).
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from dataclasses import dataclass

from catalog import kinds
from extraction.engine.base_model import MODEL_DIR, is_adapter
from extraction.engine.calibration import Scaling, apply_calibration
from extraction.engine.layout import (
    COMPOUND,
    FREE,
    NA,
    WORD,
    AttributeSpec,
    SchemaPrompt,
    doc_ids,
    schema_prompt,
    with_values_listed,
)
from extraction.engine.lru import BoundedLRU
from extraction.engine.metric import is_na

__all__ = ["AttributeSpec", "BatchStats", "Document", "Extractor", "ValueResult", "default_model_dir"]

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# ar: AR-JSON as the paper and practitioners run it (HF generate, the prefix cached); ar-honest: the
# same outputs at AR's honest best (decode/ar_honest.py: the output layer only where the constraint
# needs it, its own loop; HPD.md's fair baseline); ar-honest-static: the same with transformers'
# StaticCache for its preallocated one (which is faster is measured per host); ar-uncached: AR-JSON recomputing the instruction
# prefix for every product (the baseline before it got the prefix cache HPD has; kept to measure
# what the cache is worth); hpd-dense: HPD under dense row attention (dense_attention.py, the path
# before block attention), the same values
DECODERS = ("hpd", "ar", "ar-honest", "fork", "pld", "ar-uncached", "ar-honest-static", "hpd-dense")
PROMPT_LOOKUP_TOKENS = 10
DEFAULT_BATCH = 16  # ar / fork rows per forward when the caller does not say
LAYOUT_CANDIDATES = ((1, 16), (1, 64), (4, 4), (4, 16), (8, 2), (8, 8), (16, 1), (16, 4))  # (stack J, rows)
PROBE_LAYOUTS = ((1, 16), (4, 4), (8, 2), (16, 1))  # 16 documents each: what choose_layout times
PROBE_DOCUMENTS = 16
# The prefix caches' bound unless the caller gives one: this share of the model's own bytes (Gemma 3
# 270M in float32: about 256 MB, the instruction prefixes of some 50 to 120 schemas of 2 to 10
# attributes, 36 KB a token).
PREFIX_CACHE_SHARE_OF_MODEL = 0.25
# Schemas whose prompt ids and slot constraints stay built (kilobytes each, beside a prefix cache's
# megabytes: bounded by count, so a catalog of thousands of categories does not grow a worker forever).
SCHEMAS_KEPT = 256
DOCUMENTS_PER_FORWARD = 64  # HPD rows per forward when only the stack is given: 64 documents in all


@dataclass
class Document:
    key: str  # product sku / id
    text: str


@dataclass
class ValueResult:
    text: str  # the value: for a number in its attribute's unit (constraints.NumberRule.finish)
    confidence: float
    steps: int
    truncated: bool
    raw: str | None = None  # the text as decoded, before finish (a number in its own unit)


def finish(rule, text: str) -> str:
    """The decoded text as its attribute's value (rule None: unchanged; "n/a" stays "n/a")."""
    return text if rule is None or text == NA else rule.finish(text)


@dataclass
class BatchStats:
    forward_steps: int
    tokens_decoded: int
    seconds: float
    prefill_tokens: int = 0
    layout: str = ""  # e.g. "stack=8 rows=8"
    max_value_steps: int = 0  # longest decode (HPD: decode steps of the slowest batch)


def default_model_dir() -> pathlib.Path:
    """The default model that `make model` assembles from the pretrained base and the committed
    artifact (base_model.MODEL_DIR). The engine never reads the environment: a caller that wants
    another model passes its directory (the workers: settings.SLOTWISE_MODEL_DIR)."""
    return MODEL_DIR


def model_settings(model_dir: str | pathlib.Path) -> dict:
    """The model directory's slotwise.json (token budgets, extractive decoding), {} without one."""
    path = pathlib.Path(model_dir) / "slotwise.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def calibration_scalings(block, extractive: bool) -> dict[str, Scaling]:
    """decoder -> scaling from slotwise.json's "calibration" block ({"slope", "bias"}, or an older
    file's temperature). fork follows hpd when it has none; a decoder without a usable entry keeps
    its raw confidences. A block fitted under the other decoding mode ("extractive" recorded and
    different) is not used: its confidences were other numbers."""
    if not isinstance(block, dict):
        return {}
    if "extractive" in block and bool(block["extractive"]) != bool(extractive):
        return {}
    fits = {d: Scaling.of(block.get(d)) for d in DECODERS}
    return _with_aliases({d: f for d, f in fits.items() if f is not None})


def na_scalings(block, extractive: bool) -> dict[str, Scaling]:
    """decoder -> scaling of n/a confidences (the "na" entry of the "calibration" block, fitted
    apart from the values'); empty where none was fitted."""
    if not isinstance(block, dict) or not isinstance(block.get("na"), dict):
        return {}
    return calibration_scalings(
        {**block["na"], "extractive": block.get("extractive", extractive)}, extractive
    )


def _with_aliases(temps: dict[str, float]) -> dict[str, float]:
    """fork follows hpd; ar-uncached, ar-honest and hpd-dense decode what ar and hpd do."""
    if "fork" not in temps and "hpd" in temps:
        temps["fork"] = temps["hpd"]
    if "ar" in temps:  # the same AR outputs, with or without the prefix cache, at either cost
        temps["ar-uncached"] = temps["ar"]
        temps.setdefault("ar-honest", temps["ar"])
        temps.setdefault("ar-honest-static", temps["ar-honest"])
    if "hpd" in temps:
        temps.setdefault("hpd-dense", temps["hpd"])
    return temps


def shared_ave_dir() -> pathlib.Path:
    return REPO_ROOT.parent / "shared" / "data" / "ave"


def standin_texts() -> list[str]:
    """Product titles to train the stand-in tokenizer on (when the shared data is present)."""
    import json

    texts: list[str] = []
    for name in ("oa-mine", "ae-110k", "wdc-pave"):
        path = shared_ave_dir() / name / "train.jsonl"
        if path.is_file():
            with path.open(encoding="utf-8") as f:
                for line in f:
                    rec = json.loads(line)
                    texts.append(rec.get("input") or rec.get("input_title") or "")
                    texts.extend(rec.get("target_scores", {}))
    return texts


def boundary_rules(stored: dict) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """slotwise.json's attributes whose values end on a word boundary, end on a compound boundary,
    start on a compound boundary ({} when decoding is not extractive: no rules)."""
    word_end, compound_end, compound_start = (
        frozenset(stored.get(name, [])) for name in ("word_end", "compound_end", "compound_start")
    )
    return word_end, compound_end, compound_start


class ModelMissing(FileNotFoundError):
    """No model directory where one was expected: never silently replaced by random weights."""


def load_model(
    path: pathlib.Path,
    named: bool,
    device: str,
    dtype,
    attn: str,
    quantize: str | None,
    standin: bool = False,
):
    """The model directory at path (a full model or an adapter on its base) -> modeling.Loaded
    (int8-quantized when asked). standin: the random stand-in instead, asked for explicitly (a speed
    figure before any model is made); a missing default model is an error, so that no command
    measures random weights unless asked."""
    from extraction.engine import modeling

    if standin:
        loaded = modeling.random_standin(standin_texts(), device, dtype, attn)
    elif (path / "config.json").is_file() or is_adapter(path):
        loaded = modeling.load_dir(path, device, dtype, attn)
    elif named:
        raise ModelMissing(f"no model at {path} (config.json or adapter_config.json missing)")
    else:
        raise ModelMissing(
            f"the default model is not made yet ({path}): run `make model`, or name a model directory"
        )
    if quantize is not None:
        modeling.quantize(loaded.model, quantize)
    return loaded


class Extractor:
    """A causal LM loaded once; extract() runs HPD (default) or a baseline over documents of one schema.

    model_dir: a model directory (None: the default `make model` makes; ModelMissing when absent).
    extractive: every value is a substring of its document or "n/a" (hpd, fork and ar; pld stays
    unconstrained). None: as the model directory's slotwise.json says ("extractive"), else off (plain
    greedy decoding). calibrate: map confidences with slotwise.json's "calibration" scalings (False:
    raw confidences, what evaluate measures and fits). quantize: "int8" for dynamic int8 quantization
    of the linear layers (CPU only). dtype None: bfloat16 on cuda; on the CPU the model's
    slotwise.json "cpu_dtype" (bfloat16 only where the CPU has it natively: modeling.cpu_dtype), else
    float32. typed: the attribute types constrain the values (AttributeSpec.kind: an enumeration
    decodes one of its values, a boolean yes / no, a number a number with a unit, in hpd, fork and ar;
    pld's values that break them read "n/a"); False: every attribute is text (the negative control).
    random_standin: a random Llama of the default's size instead of any directory (speed only, its
    outputs are noise): asked for explicitly, never a silent fallback. prefix_cache_bytes: the
    schemas' prefix caches' bound (the least recently used goes first); None:
    PREFIX_CACHE_SHARE_OF_MODEL of the model's bytes.
    """

    def __init__(
        self,
        model_dir: str | pathlib.Path | None = None,
        device: str = "cpu",
        dtype: str | None = None,
        attn: str = "sdpa",
        extractive: bool | None = None,
        calibrate: bool = True,
        quantize: str | None = None,
        typed: bool = True,
        random_standin: bool = False,
        prefix_cache_bytes: int | None = None,
    ):
        from extraction.engine import modeling

        self.device = device
        path = pathlib.Path(model_dir) if model_dir is not None else default_model_dir()
        # slotwise.json, read once: the CPU dtype, extractive decoding, calibration, boundary rules
        settings_file = model_settings(path)
        if dtype is None and str(device) == "cpu":
            # a model may ask for bfloat16 on the CPU where that was measured faster at equal F1
            dtype = modeling.cpu_dtype(settings_file.get("cpu_dtype"))
        self.torch_dtype = modeling.default_dtype(device, dtype)
        loaded = load_model(
            path, model_dir is not None, device, self.torch_dtype, attn, quantize, random_standin
        )
        self.model, self.tokenizer = loaded.model, loaded.tokenizer
        # what it says of decoding: extractive or not, the boundary rules
        stored = settings_file if not loaded.random_standin else {}
        if extractive is None:
            extractive = bool(stored.get("extractive", False))
        self.extractive: bool = extractive
        self.typed: bool = typed
        # confidence scalings per decoder (slotwise.json "calibration"), applied in extract()
        self.scalings: dict[str, Scaling] = calibration_scalings(stored.get("calibration"), extractive)
        self.na_scalings: dict[str, Scaling] = na_scalings(stored.get("calibration"), extractive)
        self.enum_values_in_prompt: bool = bool(stored.get("enum_values_in_prompt", False))  # trained so
        self.calibrate: bool = calibrate
        # attributes whose values end on a word / compound boundary (slotwise.json, measured on the
        # training data); extractive decoding lets them end only there
        self.word_end, self.compound_end, self.compound_start = boundary_rules(stored if extractive else {})
        self.model_name, self.model_revision = loaded.name, loaded.revision  # str, str
        self.random_standin: bool = loaded.random_standin  # True: random weights, outputs are noise
        window = getattr(self.model.config, "sliding_window", None)
        modeling.check_servable(self.model.config, span=window)  # everything but the window; span at extract
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self._init_caches(prefix_cache_bytes)

    def _init_caches(self, prefix_cache_bytes: int | None) -> None:
        """What extract() keeps between calls, each bounded: a worker's Extractor lives for days."""
        from extraction.engine import modeling

        if prefix_cache_bytes is None:
            prefix_cache_bytes = int(modeling.model_bytes(self.model) * PREFIX_CACHE_SHARE_OF_MODEL)
        self._schemas: BoundedLRU[SchemaPrompt] = BoundedLRU(SCHEMAS_KEPT)
        self._prefix: BoundedLRU[object] = BoundedLRU(prefix_cache_bytes, modeling.cache_bytes)
        # layout_timings per attribute-count bucket: a few entries however many schemas, no bound needed
        self._layouts: dict[int, dict] = {}
        self.last_layout_costs: dict[tuple[int, int], float] = {}

    # ------------------------------------------------------------------------------ helpers

    def clear_prefix_cache(self) -> None:
        """Forget the prefix caches (benchmarks: every run then pays its prefix prefills)."""
        self._prefix.clear()

    def prefix_cache_held(self) -> tuple[int, int]:
        """(prefix caches held, their bytes): what prefix_cache_bytes bounds."""
        return len(self._prefix), self._prefix.total

    def schema(self, attributes: list[AttributeSpec]) -> SchemaPrompt:
        """The schema's prompt ids and slot constraints (cached per tuple of specs). An attribute
        whose constraint has a longest value (an enumeration) gets a gap that holds it."""
        from extraction.engine.decode.constraints import widen

        key = tuple(attributes)
        schema = self._schemas.get(key)
        if schema is None:
            prompted = [with_values_listed(a) if self.enum_values_in_prompt else a for a in attributes]
            schema = schema_prompt(self.tokenizer, prompted)
            schema.end_rules = [self.end_rule(a.name) for a in attributes]
            schema.start_rules = [self.start_rule(a.name) for a in attributes]
            schema.rules = [self.slot_rule(a, schema, n) for n, a in enumerate(attributes)]
            # the gaps live in the specs; the prompt ids do not depend on them
            schema.attributes = [widen(a, r) for a, r in zip(attributes, schema.rules, strict=True)]
            self._schemas.put(key, schema)
        return schema

    def slot_rule(self, a: AttributeSpec, schema: SchemaPrompt, n: int):
        """The constraint of attribute n (constraints.py), or None for a free value: text is a span
        when decoding is extractive (unless the attribute is free); with typed off, every attribute
        is text. An enumeration without values is text."""
        from extraction.engine.decode import constraints, extractive

        kind = a.kind if self.typed else kinds.TEXT
        if kind not in constraints.KINDS:
            raise ValueError(f"attribute {a.name!r}: kind must be one of {constraints.KINDS}, not {kind!r}")
        na = schema.na_ids if a.na else None
        if kind == kinds.ENUM and a.allowed_values:
            return constraints.choice_rule(self.tokenizer, a.allowed_values, na)
        if kind == kinds.BOOLEAN:
            return constraints.choice_rule(self.tokenizer, constraints.BOOLEAN_VALUES, na)
        if kind == kinds.NUMBER:
            table = extractive.TokenTable.from_tokenizer(self.tokenizer)
            return constraints.NumberRule(table, a.unit, na)
        if self.extractive and not a.free:
            return constraints.SpanRule(schema.na_ids, schema.end_rule(n), schema.start_rule(n))
        return None

    def end_rule(self, name: str) -> int:
        """Where values of attribute ``name`` may end (layout.FREE / WORD / COMPOUND)."""
        return COMPOUND if name in self.compound_end else WORD if name in self.word_end else FREE

    def start_rule(self, name: str) -> int:
        """Where values of attribute ``name`` may start (layout.WORD / COMPOUND)."""
        return COMPOUND if name in self.compound_start else WORD

    def prefix_cache(self, schema: SchemaPrompt) -> tuple[object, int]:
        """-> (cache of the shared prefix, forward passes spent now: 0 when cached)."""
        from extraction.engine.decode.hpd import prefill_prefix

        key = tuple(schema.prefix_ids)
        cached = self._prefix.get(key)
        if cached is not None:
            return cached, 0
        cache = prefill_prefix(self.model, schema.prefix_ids, self.device)
        self._prefix.put(key, cache)
        return cache, 1

    def check_span(self, schema: SchemaPrompt, ids: list[list[int]]) -> None:
        from extraction.engine.modeling import UnsupportedModel, check_servable, cut_window

        span = len(schema.prefix_ids) + max(len(d) for d in ids) + sum(len(k) for k in schema.key_ids)
        check_servable(self.model.config, span=span + sum(schema.gaps) + 1)
        window = cut_window(self.model.config)
        if window is not None and max(schema.gaps, default=0) >= window:
            # the masks cut prompt entries only: a slot's own value tokens must all lie in the window
            raise UnsupportedModel(
                f"a value of up to {max(schema.gaps)} tokens does not fit the model's {window}-token "
                "sliding window; lower the attribute's token budget"
            )

    def choose_layout(self, schema: SchemaPrompt, ids: list[list[int]]) -> tuple[int, int]:
        """Pick (stack J, rows) by measurement: cost per document = (prefill + max gap x step) / 16,
        with the prefill and step times of each probe layout (layout_timings) and this schema's
        largest gap. Under 16 documents every layout decodes them in one forward per step: no probe
        (it would cost more than the decode), one document per row."""
        if len(ids) < PROBE_DOCUMENTS:
            return 1, PROBE_DOCUMENTS
        timings = self.layout_timings(schema, ids)
        gap = max(schema.gaps)
        costs = {layout: (prefill + gap * step) / docs for layout, (prefill, step, docs) in timings.items()}
        self.last_layout_costs = costs
        return min(costs, key=costs.get)

    def layout_timings(self, schema: SchemaPrompt, ids: list[list[int]]) -> dict:
        """(J, R) -> (prefill seconds, seconds per decode step, documents) on 16 of these documents,
        each probe run twice (the faster counts: timings on a shared machine are noisy). Cached per
        coarse attribute-count bucket: a catalog of many categories pays
        one probe per bucket, not per category (a probe costs about as much as decoding 50
        products with the default model on this CPU)."""
        from extraction.engine.decode import hpd

        n = len(ids)
        key = len(schema.attributes) // 8
        if key in self._layouts:
            return self._layouts[key]
        pc, _ = self.prefix_cache(schema)
        timings: dict[tuple[int, int], tuple[float, float, int]] = {}
        for _ in range(2):
            for J, R in PROBE_LAYOUTS:
                if J > n:
                    continue
                sample = [ids[i % n] for i in range(J * R)]
                rows = hpd.build_rows(
                    schema, hpd.hpd_rows(sample, len(schema.attributes), J), self.pad_id, self.device
                )
                clock = [time.perf_counter()]
                hpd.decode_rows(self.model, schema, pc, rows, hpd.Counters(), max_steps=2, clock=clock)
                measured = (clock[1] - clock[0], (clock[-1] - clock[1]) / max(len(clock) - 2, 1), len(sample))
                if (J, R) not in timings or sum(measured[:2]) < sum(timings[(J, R)][:2]):
                    timings[(J, R)] = measured
        self._layouts[key] = timings
        return timings

    # ------------------------------------------------------------------------------ extract

    def extract(
        self,
        docs: list[Document],
        attributes: list[AttributeSpec],
        decoder: str = "hpd",
        stack: int | None = None,
        rows: int | None = None,
        batch: int | None = None,
    ) -> tuple[list[dict[str, ValueResult]], BatchStats]:
        """Values of every attribute for every document (result i belongs to docs[i]).

        decoder: "hpd" (default), "ar" (AR-JSON), "ar-honest" (the same values at AR's honest best),
        "fork" or "pld" (baselines). stack / rows force the
        HPD layout (J documents per row, rows per forward); otherwise it is chosen by measurement.
        batch: products per generate call (ar, ar-honest) or rows per forward (fork).
        """
        import torch

        if decoder not in DECODERS:
            raise ValueError(f"decoder must be one of {DECODERS}, not {decoder!r}")
        if not docs:
            return [], BatchStats(0, 0, 0.0)
        schema = self.schema(attributes)
        ids = [doc_ids(self.tokenizer, d.text) for d in docs]
        self.check_span(schema, ids)
        order = sorted(range(len(docs)), key=lambda i: len(ids[i]))  # similar lengths share a batch
        sorted_ids = [ids[i] for i in order]
        from extraction.engine.decode.constraints import needs_document

        spans = None  # None: no constraint; a list (entries None when no rule is a span): constrained
        if any(r is not None for r in schema.rules):
            spans = [None] * len(docs)
            if needs_document(schema.rules):
                from extraction.engine.decode.extractive import doc_index

                spans = [doc_index(self.tokenizer, docs[i].text) for i in order]
        t0 = time.perf_counter()
        with torch.inference_mode():
            if decoder in ("hpd", "fork", "hpd-dense"):
                res, stats = self._run_hpd(schema, sorted_ids, decoder, stack, rows, batch, spans)
            else:
                res, stats = self._run_ar(schema, sorted_ids, decoder, batch, spans)
        if str(self.device).startswith("cuda"):
            torch.cuda.synchronize()
        stats.seconds = time.perf_counter() - t0
        out: list[dict[str, ValueResult]] = [{} for _ in docs]
        for pos, i in enumerate(order):
            out[i] = res[pos]
        if self.calibrate:  # the one place confidences are calibrated: values and n/a each by its own fit
            value_fit, na_fit = self.scalings.get(decoder), self.na_scalings.get(decoder)
            for row in out:
                for v in row.values():
                    fit = na_fit if is_na(v.text) else value_fit
                    if fit is not None:
                        v.confidence = apply_calibration(v.confidence, fit)
        return out, stats

    def _run_hpd(self, schema, ids, decoder, stack, rows, batch, spans=None):
        from extraction.engine.decode import hpd

        names = [a.name for a in schema.attributes]
        N = len(names)
        counters = hpd.Counters()
        pc, spent = self.prefix_cache(schema)
        counters.forward_steps += spent
        if decoder == "fork":
            J, R = 1, batch or DEFAULT_BATCH
            row_docs = hpd.fork_rows(ids, N, spans)
        else:
            if stack is None and rows is None:
                J, R = self.choose_layout(schema, ids)
            else:
                J = stack or 1
                R = rows or max(1, math.ceil(DOCUMENTS_PER_FORWARD / J))
            row_docs = hpd.hpd_rows(ids, N, J, spans)
        attention = "dense" if decoder == "hpd-dense" else "blocks"
        decoded = hpd.decode(
            self.model, schema, pc, row_docs, R, self.pad_id, counters, spans is not None, attention
        )
        res = [{names[n]: self._value(v, schema.rules[n]) for n, v in vals.items()} for vals in decoded]
        stats = BatchStats(
            counters.forward_steps,
            counters.tokens_decoded,
            0.0,
            counters.prefill_tokens,
            f"rows={R}" if decoder == "fork" else f"stack={J} rows={R}",
            max(counters.max_steps_per_row_batch, default=0),
        )
        return res, stats

    def _value(self, v, rule) -> ValueResult:
        text = self.tokenizer.decode(v.ids, skip_special_tokens=True).strip() or NA
        if not v.logprobs:
            conf = 0.0
        elif getattr(rule, "path_confidence", False):  # a choice: its path's share (constraints.py)
            conf = math.exp(sum(v.logprobs))
        else:
            conf = math.exp(sum(v.logprobs) / len(v.logprobs))
        return ValueResult(finish(rule, text), conf, v.steps, v.truncated, text)

    def _run_ar(self, schema, ids, decoder, batch, spans=None):
        from extraction.engine.decode.ar import generate_json

        lookup = PROMPT_LOOKUP_TOKENS if decoder == "pld" else None
        B = 1 if lookup else (batch or DEFAULT_BATCH)
        spans = None if lookup else spans  # prompt lookup stays unconstrained
        cached = decoder in ("ar", "ar-honest", "ar-honest-static")
        prefix, spent = self.prefix_cache(schema) if cached else (None, 0)
        if decoder.startswith("ar-honest"):
            from extraction.engine.decode import ar_honest

            outs, forwards = ar_honest.generate_json(
                self.model,
                self.tokenizer,
                schema,
                ids,
                B,
                spans=spans,
                prefix_cache=prefix,
                static=decoder == "ar-honest-static",
            )
        else:
            outs, forwards = generate_json(
                self.model,
                self.tokenizer,
                schema,
                ids,
                B,
                prompt_lookup=lookup,
                spans=spans,
                prefix_cache=prefix,
            )
        forwards += spent
        rules = dict(zip((a.name for a in schema.attributes), schema.rules, strict=True))
        res = []
        for o in outs:
            row = {}
            for name, v in o.values.items():
                text = v.text.strip() if v.text and v.text.strip() else NA
                rule = rules[name]
                if spans is None and rule is not None and not rule.accepts(text):
                    text = NA  # unconstrained (pld) and outside its type: never returned as a value
                row[name] = ValueResult(
                    finish(rule, text), v.confidence, v.steps, v.truncated or v.text is None, text
                )
            res.append(row)
        return res, BatchStats(
            forwards,
            sum(o.tokens for o in outs),
            0.0,
            0,
            f"batch={B}",
            max((o.tokens for o in outs), default=0),
        )
