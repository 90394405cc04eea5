"""Train the bundled extraction model, or fine-tune any local causal LM, on HPD and AR-JSON at once.

    python -m extraction train --data ../shared/data/ave --out models/slotwise-ave [--base DIR]
        [--seed 0] [--steps N] [--minutes M] [--device cpu|cuda] [--size small]

One training row holds one schema's prefix (layout.py wording) and several documents of that
schema after it, in both formats the decoders use (HPD.md point 5):

    memory:   prefix | HPD doc 0 + keys with gaps | ... | AR doc 0 + JSON target | ... | values of HPD docs
    doc id:   -1     | 0                          |     | J                       |     | their HPD doc
    slot id:  -1     | -1                         |     | -1                      |     | their attribute n

- HPD documents: the prompt with gaps, every gold value appended at its slot positions, loss on
  value tokens and terminators (layout.py decides ids and positions, masks.hpd_mask the mask),
  exactly the computation of prefill + teacher-forced HPD decode steps (tested).
- AR documents: prompt + JSON target with the ordinary causal loss. An AR document has its own doc
  id and only prompt slots, so the same mask makes it plain causal attention over prefix + itself:
  the shared prefix is computed once for all documents of the row.

Gold values: the first accepted form; "n/a" where gold says absent. An attribute of the category
schema that a record does not judge (oa-mine, ae-110k) has no HPD value and no loss in AR.
Copy augmentation (augment.py) rewrites some values of a drawn product; gaps are drawn per row
around the value lengths and attribute order is shuffled per row so that any schema order and any
sensible token budget at inference are in distribution.

Progress for the learning-rate schedule is max(step / steps, elapsed / minutes): with --minutes as
a safety cap a slow machine still ends on a decayed rate; the run is reproducible (seeded) when
the step budget is what ends it.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import augment as aug
from . import extractive as span
from .allocator import limit_fragmentation
from .base_model import adapted_model, is_adapter
from .data import product_text
from .layout import NA, AttributeSpec, build_hpd_layout, doc_ids, schema_prompt, terminator_id, value_ids
from .masks import hpd_mask
from .splits import DEFAULT_DATA, IMPLICIT, SPLITS_DIR, load_split, resolve_data_dirs
from .tokenizer_train import DEFAULT_VOCAB_SIZE

log = logging.getLogger("extraction.train")

DEFAULT_OUT = str(Path(__file__).resolve().parents[2] / "models" / "slotwise-ave")
IGNORE = -100
EXTRACTIVE_SHARE = 0.95  # values verbatim in their document from which a model decodes extractively
# an attribute gets a boundary rule (word / compound ends, compound starts) only when nearly all its
# training values obey it (word ends: OA-Mine 7,357 of 7,360 values; AE-110k's "Gender" is often
# "Men" of "Mens": 89%)
BOUNDARY_SHARE = 0.99
BOUNDARY_MIN_VALUES = 20  # fewer values: no rule (a few values prove little)

# model presets for training from scratch (Llama: a standard HF architecture the engine serves)
SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2),
    "small": dict(hidden_size=256, intermediate_size=768, num_hidden_layers=6, num_attention_heads=4),
    "medium": dict(hidden_size=320, intermediate_size=960, num_hidden_layers=8, num_attention_heads=5),
}


# ---------------------------------------------------------------------------------- products


@dataclass
class Example:
    """One training product: document text, category, gold (attr -> value text, NA or None)."""

    text: str
    category: str
    gold: dict[str, str | None]
    source: str = ""


def record_text(record: dict) -> str:
    return product_text(record)  # the engine's document text (title + description for wdc-pave)


def record_gold(record: dict) -> dict[str, str | None]:
    """attr -> the value the model should write (first accepted form) or NA."""
    gold: dict[str, str | None] = {}
    for attr, forms in record.get("target_scores", {}).items():
        value = aug.first_form(forms)
        gold[attr] = value if value else NA
    return gold


def to_example(record: dict, source: str) -> Example:
    return Example(record_text(record), str(record.get("category", "")), record_gold(record), source)


@dataclass
class Corpus:
    """Training records grouped by schema (data set, category), with value pools for augmentation."""

    groups: dict[tuple[str, str], list[dict]] = field(default_factory=dict)
    schemas: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    pools: dict[str, dict] = field(default_factory=dict)
    phrases: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    dev: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(len(v) for v in self.groups.values())


def load_corpus(data: list[str], splits_dir: Path = SPLITS_DIR, write_splits: bool = True) -> Corpus:
    corpus = Corpus()
    for data_dir in resolve_data_dirs(data):
        split = load_split(data_dir, splits_dir=splits_dir, write=write_splits)
        corpus.dev[split.name] = split.dev
        corpus.pools[split.name] = aug.value_pools(split.train)
        corpus.phrases[split.name] = aug.phrase_pool(split.train)
        for record in split.train:
            key = (split.name, str(record.get("category", "")))
            corpus.groups.setdefault(key, []).append(record)
            names = corpus.schemas.setdefault(key, [])
            for attr in record.get("target_scores", {}):
                if attr not in names:
                    names.append(attr)
    return corpus


def focus_subset(corpus: Corpus, per_group: int, seed: int) -> Corpus:
    """per_group products of every schema group (seeded draw), for the focus phase."""
    rng = random.Random(seed)
    out = Corpus(schemas=corpus.schemas, pools=corpus.pools, dev=corpus.dev)
    for key in sorted(corpus.groups):
        records = list(corpus.groups[key])
        rng.shuffle(records)
        out.groups[key] = records[:per_group]
    return out


def tokenizer_texts(corpus: Corpus) -> list[str]:
    """Every text the model reads or writes: prompts (layout wording) and values."""
    from .layout import doc_text, key_text, prefix_text

    texts = []
    for key, records in sorted(corpus.groups.items()):
        names = corpus.schemas[key]
        texts.append(prefix_text([AttributeSpec(n) for n in names]))
        texts += [key_text(n, i == 0) for i, n in enumerate(names)]
        for record in records:
            ex = to_example(record, key[0])
            texts.append(doc_text(ex.text))
            texts += [v for v in ex.gold.values() if v]
    return texts


def attribute_budgets(corpus: Corpus, tokenizer, margin: int = 2, low: int = 4, high: int = 48) -> dict:
    """Suggested gap (token budget) per attribute: longest training value + margin, clamped."""
    longest: dict[str, int] = {}
    for records in corpus.groups.values():
        for record in records:
            for attr, value in record_gold(record).items():
                n = len(value_ids(tokenizer, value or NA, 0)) - 1
                longest[attr] = max(longest.get(attr, 0), n)
    per_attr = {a: min(high, max(low, n + margin)) for a, n in sorted(longest.items())}
    return {
        "attribute_budgets": per_attr,
        "default_budget": 16,
        "note": "longest training value in tokens + 2, clamped to [4, 48]; training saw gaps up to +12",
    }


def verbatim_share(corpus: Corpus) -> float:
    """Share of the present training values that occur verbatim in their document, over the data
    sets of text spans (ImplicitAVE's implied values decode under their enumeration instead)."""
    found = total = 0
    for (source, _category), records in corpus.groups.items():
        if source == IMPLICIT:
            continue
        for record in records:
            text = " ".join(product_text(record).split())
            for value in record_gold(record).values():
                if value and value != NA:
                    total += 1
                    found += " ".join(value.split()) in text
    return found / total if total else 0.0


def on_boundary(text: str, value: str, rule: int = span.WORD, side: str = "end") -> bool | None:
    """Whether some occurrence of value in text ends (side "end") or starts ("start") on a word
    (rule WORD) or compound (COMPOUND) boundary, as extractive decoding judges it (None: value
    not in text)."""
    index = span.DocIndex(text, span.TokenTable([]))  # bytes only: no vocabulary needed
    needle = " ".join(value.split()).encode("utf-8")
    found, at = False, index.data.find(needle)
    while at >= 0:
        found = True
        if index.word_end(at + len(needle), rule) if side == "end" else index.word_start(at, rule):
            return True
        at = index.data.find(needle, at + 1)
    return False if found else None


def boundary_attributes(
    corpus: Corpus,
    rule: int = span.WORD,
    side: str = "end",
    share: float = BOUNDARY_SHARE,
    min_values: int = BOUNDARY_MIN_VALUES,
) -> list[str]:
    """Attributes (names pooled over data sets) whose verbatim training values end (start) on a
    ``rule`` boundary at least ``share`` of the time, over at least ``min_values`` values."""
    counts: dict[str, list[int]] = {}
    for records in corpus.groups.values():
        for record in records:
            text = product_text(record)
            for attr, value in record_gold(record).items():
                if not value or value == NA:
                    continue
                hit = on_boundary(text, value, rule, side)
                if hit is not None:
                    c = counts.setdefault(attr, [0, 0])
                    c[0] += hit
                    c[1] += 1
    return sorted(a for a, (ok, n) in counts.items() if n >= min_values and ok >= share * n)


def model_settings(corpus: Corpus, tokenizer) -> dict:
    """slotwise.json: token budgets, extractive decoding on when the model was trained on copied
    values (at least 95% of them verbatim in their document), and the attributes decoded to word
    or compound ends and from compound starts."""
    share = verbatim_share(corpus)
    return {
        **attribute_budgets(corpus, tokenizer),
        "extractive": share >= EXTRACTIVE_SHARE,
        "verbatim_share": round(share, 4),
        "word_end": boundary_attributes(corpus),
        "compound_end": boundary_attributes(corpus, span.COMPOUND),
        "compound_start": boundary_attributes(corpus, span.COMPOUND, "start"),
    }


# ---------------------------------------------------------------------------------- rows


@dataclass
class Row:
    """One packed training sequence (lists of length T)."""

    input_ids: list[int]
    position_ids: list[int]
    doc_ids: list[int]
    slot_ids: list[int]
    labels: list[int]
    n_hpd: int = 0
    n_ar: int = 0
    # index of a labeled value token -> the tokens extractive decoding allows there (with_choices)
    choices: dict[int, list[int]] = field(default_factory=dict)
    # next-token targets inside each document's text (the auxiliary language-model loss)
    lm_labels: list[int] = field(default_factory=list)


def value_terminator(tokenizer) -> int:
    """The token that ends every value (layout.terminator_id: VALUE_END when the vocab has it)."""
    return terminator_id(tokenizer)


def hpd_values(tokenizer, specs: list[AttributeSpec], gold: dict[str, str | None], terminator: int):
    """Per attribute: value ids + terminator (None where the record does not judge it)."""
    out = []
    for spec in specs:
        value = gold.get(spec.name)
        out.append(None if value is None else value_ids(tokenizer, value, terminator))
    return out


def value_choices(index, target: list[int], na: list[int], end: int) -> list[list[int]] | None:
    """For each token of a gold value (value ids + end token): the tokens extractive decoding
    allows at that step (extractive.SpanState). None when the gold value is not a span of the
    document (it could not be decoded extractively, so it gets no extractive loss)."""
    state = span.SpanState(index, na, end)
    out = []
    for i, tok in enumerate(target):
        allowed = state.allowed()
        if tok not in allowed:
            return None
        out.append(allowed)
        if i < len(target) - 1:
            state.push(tok)
    return out


def build_row(
    tokenizer, specs: list[AttributeSpec], hpd: list[Example], ar: list[Example], with_choices: bool = False
) -> Row:
    """Prefix + HPD documents (gold values appended in their slots) + AR documents (JSON target).

    specs' max_tokens must cover each HPD value (value tokens <= gap); AR values are never cut.
    with_choices: record, for every value token, the tokens extractive decoding would allow there
    (Row.choices), for the extractive loss.
    """
    schema = schema_prompt(tokenizer, specs)  # its terminator: VALUE_END (the bundled tokenizer has it)
    texts = [doc_ids(tokenizer, ex.text) for ex in hpd]
    layout = build_hpd_layout(schema, texts)
    ids, pos = list(layout.input_ids), list(layout.position_ids)
    doc, slot = list(layout.doc_ids), list(layout.slot_ids)
    labels = [IGNORE] * len(ids)
    lm_labels = [IGNORE] * len(ids)
    choices: dict[int, list[int]] = {}
    for j, text in enumerate(texts):
        first = layout.doc_ids.index(j)
        lm_labels[first : first + len(text) - 1] = text[1:]
    appended: list[tuple[list[int], list[int], list[int], list[int], list[int], list | None]] = []
    for j, ex in enumerate(hpd):
        index = span.doc_index(tokenizer, ex.text) if with_choices else None
        for n, target in enumerate(hpd_values(tokenizer, specs, ex.gold, schema.terminator)):
            if target is None:
                continue
            if len(target) - 1 > specs[n].max_tokens:
                raise ValueError(f"value of {specs[n].name!r} longer than its gap")
            labels[layout.key_end[j][n]] = target[0]
            allowed = (
                value_choices(index, target, schema.na_ids, schema.terminator) if index is not None else None
            )
            if allowed:
                choices[layout.key_end[j][n]] = allowed[0]
            k = len(target) - 1
            appended.append(
                (
                    target[:-1],
                    [layout.slot_start[j][n] + i for i in range(k)],
                    [j] * k,
                    [n] * k,
                    target[1:],
                    allowed[1:] if allowed else None,
                )
            )
    # AR documents: own doc id, prompt slots, positions restart after the prefix
    prefix_len = layout.prefix_len
    for i, ex in enumerate(ar):
        j = len(hpd) + i
        prompt = doc_ids(tokenizer, ex.text)
        target, tmask, spans = ar_target_masked(tokenizer, schema, specs, ex.gold)
        if with_choices and schema.value_end_in_ar:
            index = span.doc_index(tokenizer, ex.text)
            first = len(ids) + len(prompt) - 1  # index whose label is target[0]
            for at, vids in spans:
                allowed = value_choices(index, vids, schema.na_ids, schema.terminator)
                for i, a in enumerate(allowed or []):
                    choices[first + at + i] = a
        seq = prompt + target
        lm_labels += prompt[1:] + [IGNORE] * (len(target) + 1)
        ids += seq
        pos += list(range(prefix_len, prefix_len + len(seq)))
        doc += [j] * len(seq)
        slot += [-1] * len(seq)
        # label at index t = token t+1 of the sequence; only target tokens that are judged
        tgt_labels = [tok if keep else IGNORE for tok, keep in zip(target, tmask, strict=True)]
        labels += [IGNORE] * (len(prompt) - 1) + tgt_labels + [IGNORE]
    for a_ids, a_pos, a_doc, a_slot, a_lab, a_choices in appended:
        for i, a in enumerate(a_choices or []):
            choices[len(ids) + i] = a
        ids += a_ids
        pos += a_pos
        doc += a_doc
        slot += a_slot
        labels += a_lab
        lm_labels += [IGNORE] * len(a_lab)
    return Row(ids, pos, doc, slot, labels, len(hpd), len(ar), choices, lm_labels)


def ar_target_masked(tokenizer, schema, specs: list[AttributeSpec], gold: dict[str, str | None]):
    """layout.ar_target with a loss mask: value tokens of unjudged attributes carry no loss (their
    text is "n/a" as a placeholder). Same ids as layout.ar_target for fully judged records.

    A value keeps its terminator in AR-JSON too when the terminator is a dedicated value-end token
    (not eos): HPD slot 0 and AR value 0 see the same context, so both must predict the same token
    after the value. The object ends with '"}' and eos.

    Also returns, per judged value, (offset of its first token in the target, its ids)."""
    eos = tokenizer.eos_token_id
    keep_term = schema.terminator != eos
    out: list[int] = []
    keep: list[bool] = []
    spans: list[tuple[int, list[int]]] = []
    for n, spec in enumerate(specs):
        value = gold.get(spec.name)
        out += schema.key_ids[n]
        keep += [True] * len(schema.key_ids[n])
        vids = value_ids(tokenizer, NA if value is None else value, schema.terminator)
        vids = vids if keep_term else vids[:-1]
        if value is not None:
            spans.append((len(out), vids))
        out += vids
        keep += [value is not None] * len(vids)
    out += schema.end_ids + [eos]
    keep += [True] * (len(schema.end_ids) + 1)
    return out, keep, spans


def collate(rows: list[Row], pad_id: int, vocab_size: int | None = None) -> dict[str, torch.Tensor]:
    """Right-pad rows (doc = slot = -2, position 0, no loss).

    With vocab_size, also "choices": bool [M, V] over the M labeled tokens (row-major order, as
    training_logits selects them), True where extractive decoding allows a token there; a row of
    all True where it does not constrain the token (keys, JSON punctuation, values off the text)."""
    width = max(len(r.input_ids) for r in rows)

    def pad(values: list[int], fill: int) -> list[int]:
        return values + [fill] * (width - len(values))

    batch = {
        "input_ids": torch.tensor([pad(r.input_ids, pad_id) for r in rows]),
        "position_ids": torch.tensor([pad(r.position_ids, 0) for r in rows]),
        "doc_ids": torch.tensor([pad(r.doc_ids, -2) for r in rows]),
        "slot_ids": torch.tensor([pad(r.slot_ids, -2) for r in rows]),
        "labels": torch.tensor([pad(r.labels, IGNORE) for r in rows]),
        "lm_labels": torch.tensor([pad(r.lm_labels or [IGNORE] * len(r.labels), IGNORE) for r in rows]),
    }
    if vocab_size is not None:
        allowed: list[list[int] | None] = []
        for r in rows:
            allowed += [r.choices.get(t) for t, lab in enumerate(r.labels) if lab != IGNORE]
        batch["choices"] = span.allowed_mask(allowed, vocab_size)
    return batch


# ---------------------------------------------------------------------------------- row sampler


@dataclass
class RowConfig:
    row_tokens: int = 1024  # capacity of a packed row
    p_hpd: float = 0.5  # a drawn product goes to the HPD part of its row (else AR)
    p_shuffle: float = 0.5  # a row's attribute order is shuffled (else the schema's first-seen order)
    gap_extra: int = 12  # gaps: longest value of the row + U(0, gap_extra), at least min_gap
    min_gap: int = 4
    max_doc_tokens: int = 640  # longer documents are cut (word boundary) to fit a row
    keep: dict[str, float] = field(default_factory=dict)  # data set -> share of its products per epoch
    choices: bool = False  # record what extractive decoding allows at each value token (Row.choices)


def _fit_text(tokenizer, text: str, max_tokens: int) -> str:
    words = text.split()
    while words and len(doc_ids(tokenizer, " ".join(words))) > max_tokens:
        words = words[: max(1, int(len(words) * 0.9))] if len(words) > 1 else []
    return " ".join(words)


class RowSampler:
    """Epoch after epoch: shuffle each schema group, augment, pack into rows, shuffle the rows."""

    def __init__(
        self, corpus: Corpus, tokenizer, cfg: RowConfig, aug_cfg: aug.AugmentConfig | None, seed: int
    ):
        self.corpus, self.tok, self.cfg, self.aug_cfg = corpus, tokenizer, cfg, aug_cfg
        self.rng = random.Random(seed)
        self.epoch = 0
        self._lengths: dict[str, int] = {}

    def _ntok(self, text: str) -> int:
        if text not in self._lengths:
            self._lengths[text] = len(value_ids(self.tok, text, 0))
        return self._lengths[text]

    def _length(self, ex: Example, specs: list[AttributeSpec], hpd: bool) -> int:
        """Tokens ex adds to a row (estimate: keys and values as if alone)."""
        doc = len(doc_ids(self.tok, ex.text))
        keys = sum(self._ntok(f'", "{s.name}": "') for s in specs)
        vals = sum(self._ntok(v or NA) for v in ex.gold.values())
        return doc + keys + vals + (0 if hpd else 2)

    def epoch_rows(self) -> list[Row]:
        rows: list[Row] = []
        for key in sorted(self.corpus.groups):
            records = list(self.corpus.groups[key])
            self.rng.shuffle(records)
            names = self.corpus.schemas[key]
            pools = self.corpus.pools[key[0]]
            phrases = self.corpus.phrases.get(key[0])
            exs = []
            keep = self.cfg.keep.get(key[0], 1.0)
            for record in records:
                if keep < 1.0 and self.rng.random() >= keep:
                    continue  # a data set drawn less often per epoch (its rows are long)
                # copy-augmentation swaps a value where the text writes it; an implied value is not
                # written, and a mutated one would leave its closed list
                if self.aug_cfg is not None and key[0] != IMPLICIT:
                    record = aug.augment_record(record, pools, self.rng, self.aug_cfg, phrases)
                ex = to_example(record, key[0])
                if len(doc_ids(self.tok, ex.text)) > self.cfg.max_doc_tokens:
                    ex.text = _fit_text(self.tok, ex.text, self.cfg.max_doc_tokens)
                    ex.gold = {
                        a: (v if v in (None, NA) or v in ex.text else None) for a, v in ex.gold.items()
                    }
                exs.append(ex)
            # products that judge the same attributes share rows, whose keys are then only the
            # attributes their products judge (OA-Mine and AE-110k records judge ~5 of a category's
            # ~12): no tokens spent on keys that carry no loss
            exs.sort(key=lambda ex: tuple(sorted(ex.gold)))
            rows += self._pack(names, exs)
        self.rng.shuffle(rows)
        self.epoch += 1
        return rows

    def _specs(self, names: list[str], exs: list[Example]) -> list[AttributeSpec]:
        order = list(names)
        if self.rng.random() < self.cfg.p_shuffle:
            self.rng.shuffle(order)
        specs = []
        for name in order:
            longest = max((self._ntok(ex.gold[name]) - 1 for ex in exs if ex.gold.get(name)), default=1)
            gap = max(self.cfg.min_gap, longest) + self.rng.randint(0, self.cfg.gap_extra)
            specs.append(AttributeSpec(name, max_tokens=gap))
        return specs

    def _pack(self, names: list[str], exs: list[Example]) -> list[Row]:
        rows, i = [], 0
        base_specs = [AttributeSpec(n) for n in names]
        prefix = len(schema_prompt(self.tok, base_specs).prefix_ids)
        while i < len(exs):
            hpd, ar, used = [], [], prefix
            while i < len(exs):
                is_hpd = self.rng.random() < self.cfg.p_hpd
                own = [s for s in base_specs if s.name in exs[i].gold]
                need = self._length(exs[i], own, is_hpd)
                if (hpd or ar) and used + need > self.cfg.row_tokens:
                    break
                (hpd if is_hpd else ar).append(exs[i])
                used += need
                i += 1
            judged = [n for n in names if any(n in ex.gold for ex in hpd + ar)] or names
            rows.append(build_row(self.tok, self._specs(judged, hpd + ar), hpd, ar, self.cfg.choices))
        return rows

    def batches(self, batch_tokens: int):
        """Endless stream of lists of rows with at most batch_tokens tokens in all, padding included
        (a row longer than that is a batch of its own)."""
        while True:
            rows = self.epoch_rows()
            batches, cur, width = [], [], 0
            # rows of similar length share a batch (a batch is padded to its longest row: about
            # 30% of the tokens were padding without this); the order of the batches is shuffled
            for row in sorted(rows, key=lambda r: len(r.input_ids)):
                width_after = max(width, len(row.input_ids))
                if cur and width_after * (len(cur) + 1) > batch_tokens:
                    batches.append(cur)
                    cur, width_after = [], len(row.input_ids)
                cur.append(row)
                width = width_after
            if cur:
                batches.append(cur)
            self.rng.shuffle(batches)
            yield from batches


# ---------------------------------------------------------------------------------- model


def training_hidden(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The training forward: one pass with the HPD mask -> last hidden states [B, T, H]."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    b = {k: batch[k].to(device) for k in ("input_ids", "position_ids", "doc_ids", "slot_ids")}
    mask = hpd_mask(b["position_ids"], b["doc_ids"], b["slot_ids"], dtype)
    return (
        causal_lm(model)
        .base_model(
            input_ids=b["input_ids"], position_ids=b["position_ids"], attention_mask=mask, use_cache=False
        )
        .last_hidden_state
    )


def training_logits(
    model, batch: dict[str, torch.Tensor], only_labeled: bool = True, hidden=None, key="labels"
):
    """The training forward -> (logits [M, V] float32, labels [M]) for batch[key] ("labels": value
    tokens; "lm_labels": document text). hidden: training_hidden's output, to reuse one forward.

    With only_labeled, logits are computed only where a label is (M = labeled tokens); else for
    all tokens ([B*T, V], labels -100 where none).
    """
    if hidden is None:
        hidden = training_hidden(model, batch)
    labels = batch[key].to(hidden.device)
    if only_labeled:
        sel = labels != IGNORE
        hidden, labels = hidden[sel], labels[sel]
    else:
        hidden, labels = hidden.reshape(-1, hidden.shape[-1]), labels.reshape(-1)
    logits = causal_lm(model).get_output_embeddings()(hidden).float()
    return logits, labels


def causal_lm(model):
    """The causal LM under a peft wrapper (its LoRA layers sit inside it), or the model itself."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def with_lora(model, new_ids: list[int], rank: int, first_layer: int = 0):
    """Wrap model in a peft LoRA adapter of this rank on every linear layer of the decoder layers
    from first_layer up. new_ids (tokens added to the base's vocabulary: ``<|eov|>``) are trained
    as rows of the tied embedding (peft's trainable tokens), so the artifact holds those rows and
    not the whole matrix."""
    from peft import LoraConfig, get_peft_model

    layers = list(range(first_layer, model.config.num_hidden_layers))
    config = LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        layers_to_transform=layers,
        trainable_token_indices={"embed_tokens": new_ids} if new_ids else None,
        ensure_weight_tying=True,  # one trained row serves the tied input and output embedding
    )
    return get_peft_model(model, config)


def new_model(tokenizer, size: str, seed: int, max_positions: int = 4096):
    from transformers import LlamaConfig, LlamaForCausalLM

    kw = dict(SIZES[size])
    kw["num_key_value_heads"] = kw["num_attention_heads"]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        rope_theta=10000.0,
        **kw,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def load_base(base: str, device: str, add_value_end: bool = True):
    """A local HF causal LM and its tokenizer. With add_value_end, ``<|eov|>`` (layout.VALUE_END)
    joins the vocabulary (embeddings resized): values then end with it in HPD and AR-JSON alike, so
    HPD slot 0 and AR value 0, which see the same context, are trained on the same target."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .base_model import resize_embeddings
    from .layout import VALUE_END
    from .modeling import check_servable

    tokenizer = AutoTokenizer.from_pretrained(base)
    if tokenizer.eos_token_id is None:
        raise SystemExit(f"{base}: the tokenizer has no eos token (the HPD terminator)")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype, attn_implementation="sdpa")
    check_servable(model.config, span=4096)
    if add_value_end and VALUE_END not in tokenizer.get_vocab():
        tokenizer.add_special_tokens({"additional_special_tokens": [VALUE_END]})
        resize_embeddings(model, len(tokenizer))
        log.info("added %s to the tokenizer (id %d)", VALUE_END, tokenizer.convert_tokens_to_ids(VALUE_END))
    return model, tokenizer


# ---------------------------------------------------------------------------------- training loop


@dataclass
class TrainConfig:
    seed: int = 0
    steps: int = 2000
    minutes: float = 0.0  # 0 = no time cap
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.1
    batch_tokens: int = 4096
    clip: float = 1.0
    log_every: int = 25
    autocast: str = "bf16"  # "bf16": bfloat16 autocast (weights stay float32), "none": plain float32
    extractive_weight: float = 0.0  # weight of the extractive loss (0 = off; needs RowConfig.choices)
    lm_weight: float = 0.0  # weight of the language-model loss on the documents' text (0 = off)


def extractive_loss(logits: torch.Tensor, labels: torch.Tensor, choices: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over only the tokens extractive decoding allows at each value token: the
    choice the decoder really makes (which word of the document starts the value, where it ends,
    or n/a), so the model learns to rank the document's words rather than the whole vocabulary.
    Tokens the decoder does not constrain (rows of all True) are left to the ordinary loss."""
    constrained = ~choices.all(dim=1)
    if not bool(constrained.any()):
        return logits.new_zeros(())
    masked = logits[constrained].masked_fill(~choices[constrained], float("-inf"))
    return torch.nn.functional.cross_entropy(masked, labels[constrained])


def lr_at(cfg: TrainConfig, progress: float, step: int) -> float:
    warm = min(1.0, (step + 1) / max(1, cfg.warmup))
    cos = 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    return cfg.lr * warm * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * cos)


def collate_for(rows: list[Row], pad_id: int, model, cfg: TrainConfig) -> dict[str, torch.Tensor]:
    """collate, with the extractive choices when the extractive loss is on."""
    vocab = model.get_output_embeddings().weight.shape[0] if cfg.extractive_weight > 0 else None
    return collate(rows, pad_id, vocab)


def step_losses(model, batch: dict[str, torch.Tensor], cfg: TrainConfig, device: str) -> dict:
    """The loss terms of one step, from one forward pass: "value" (cross-entropy on the value
    tokens and terminators, both formats), "extractive" and "lm" when their weights are on."""
    with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=cfg.autocast == "bf16"):
        hidden = training_hidden(model, batch)
        logits, labels = training_logits(model, batch, hidden=hidden)
        if cfg.lm_weight > 0:
            lm_logits, lm_labels = training_logits(model, batch, hidden=hidden, key="lm_labels")
    logits = logits.float()
    terms = {"value": torch.nn.functional.cross_entropy(logits, labels)}
    if cfg.extractive_weight > 0:
        terms["extractive"] = extractive_loss(logits, labels, batch["choices"].to(logits.device))
    if cfg.lm_weight > 0 and len(lm_labels):
        terms["lm"] = torch.nn.functional.cross_entropy(lm_logits.float(), lm_labels)
    return terms


def train_loop(
    model, sampler: RowSampler, pad_id: int, cfg: TrainConfig, device: str, save=None, save_every: float = 0.0
) -> dict:
    """AdamW, warmup + cosine on progress; save(step) is called every save_every minutes."""
    torch.manual_seed(cfg.seed)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and p.requires_grad]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 and p.requires_grad]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr,
        betas=(0.9, 0.95),
    )
    model.train()
    start = time.time()
    stream = sampler.batches(cfg.batch_tokens)
    step, tokens, seen, seen_n = 0, 0, {}, 0
    history = []
    last_save = start
    while step < cfg.steps:
        elapsed = time.time() - start
        progress = step / cfg.steps
        if cfg.minutes > 0:
            if elapsed >= cfg.minutes * 60:
                log.info("time cap of %.1f min reached at step %d", cfg.minutes, step)
                break
            progress = max(progress, elapsed / (cfg.minutes * 60))
        lr = lr_at(cfg, progress, step)
        for group in opt.param_groups:
            group["lr"] = lr
        rows = next(stream)
        terms = step_losses(model, collate_for(rows, pad_id, model, cfg), cfg, device)
        loss = terms["value"]
        if "extractive" in terms:
            loss = loss + cfg.extractive_weight * terms["extractive"]
        if "lm" in terms:
            loss = loss + cfg.lm_weight * terms["lm"]
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        step += 1
        tokens += sum(len(r.input_ids) for r in rows)
        for name, value in terms.items():
            seen[name] = seen.get(name, 0.0) + float(value.detach())
        seen_n += 1
        if step % cfg.log_every == 0 or step == cfg.steps:
            means = {("loss" if k == "value" else k): round(v / seen_n, 4) for k, v in seen.items()}
            history.append({"step": step, **means, "lr": lr, "minutes": round(elapsed / 60, 2)})
            log.info(
                "step %d/%d %s lr %.2e epoch %d tokens %d %.1f min %.0f tok/s",
                step,
                cfg.steps,
                " ".join(f"{k} {v:.4f}" for k, v in means.items()),
                lr,
                sampler.epoch,
                tokens,
                elapsed / 60,
                tokens / max(1e-9, elapsed),
            )
            seen, seen_n = {}, 0
        if save is not None and save_every > 0 and time.time() - last_save >= save_every * 60:
            model.eval()
            save(step)
            model.train()
            last_save = time.time()
    model.eval()
    return {
        "steps": step,
        "tokens": tokens,
        "seconds": round(time.time() - start, 1),
        "epochs": sampler.epoch,
        "history": history,
    }


# ---------------------------------------------------------------------------------- CLI


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "train", help="train the extraction model on HPD + AR-JSON (or fine-tune --base)"
    )
    p.add_argument(
        "--data",
        nargs="+",
        default=[str(DEFAULT_DATA)],
        help="AVE root or data set folders with train.jsonl (default: shared/data/ave)",
    )
    p.add_argument("--out", default=DEFAULT_OUT, help="output model directory")
    p.add_argument(
        "--base", default=None, help="local HF causal LM directory to fine-tune (else train from scratch)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=TrainConfig.steps)
    p.add_argument("--minutes", type=float, default=0.0, help="time cap in minutes (0 = none)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument(
        "--keep-vocab",
        action="store_true",
        help="--base: do not add <|eov|> (values then end with eos; HPD slot 0 and AR value 0 conflict)",
    )
    p.add_argument(
        "--size", choices=sorted(SIZES), default="small", help="model preset when training from scratch"
    )
    p.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    p.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default 2e-3 scratch, 5e-5 --base)"
    )
    p.add_argument(
        "--lora",
        type=int,
        default=0,
        metavar="R",
        help="--base: train a LoRA adapter of rank R (peft) instead of every weight; --out then holds "
        "the adapter, which `base_model` merges into the base",
    )
    p.add_argument(
        "--lora-from", type=int, default=0, metavar="L", help="--lora: adapt decoder layers L and up only"
    )
    p.add_argument("--batch-tokens", type=int, default=TrainConfig.batch_tokens)
    p.add_argument("--row-tokens", type=int, default=RowConfig.row_tokens)
    p.add_argument("--formats", default="hpd,ar", help="hpd,ar (default), hpd or ar")
    p.add_argument("--no-augment", action="store_true", help="no copy augmentation")
    p.add_argument("--p-augment", type=float, default=aug.AugmentConfig.p_product)
    p.add_argument("--p-attribute", type=float, default=aug.AugmentConfig.p_attribute)
    p.add_argument("--p-mutate", type=float, default=aug.AugmentConfig.p_mutate)
    p.add_argument(
        "--p-phrase",
        type=float,
        default=aug.AugmentConfig.p_phrase,
        help="share of the replacements that are not mutated which are phrases of another title",
    )
    p.add_argument(
        "--keep",
        nargs="*",
        default=[],
        metavar="NAME=SHARE",
        help="draw only this share of a data set's products per epoch (e.g. wdc-pave=0.4: long documents)",
    )
    p.add_argument(
        "--focus-steps",
        type=int,
        default=0,
        help="first train this many steps on a few products per schema, HPD format only, no augmentation "
        "(teaches a model from scratch to read values from the document)",
    )
    p.add_argument("--focus-products", type=int, default=16, help="products per schema in the focus phase")
    p.add_argument(
        "--extractive-loss",
        type=float,
        default=1.0,
        metavar="W",
        help="add W x the cross-entropy over only the tokens extractive decoding allows at each value "
        "token (default 1; 0 = off)",
    )
    p.add_argument(
        "--lm-loss",
        type=float,
        default=None,
        metavar="W",
        help="add W x the next-token loss on the documents' own text (default 0.3 from scratch, 0 with "
        "--base: a pretrained model already reads)",
    )
    p.add_argument("--log-every", type=int, default=TrainConfig.log_every)
    p.add_argument(
        "--save-every",
        type=float,
        default=15.0,
        help="save the model to --out every M minutes (0 = end only)",
    )
    p.add_argument(
        "--splits-dir", default=str(SPLITS_DIR), help="where the seeded WDC-PAVE dev split is written/read"
    )
    p.add_argument(
        "--autocast",
        choices=["bf16", "none"],
        default=TrainConfig.autocast,
        help="bf16 autocast for the training forward (float32 master weights) or none",
    )
    p.set_defaults(func=run_train)
    return p


def lm_weight(args) -> float:
    """--lm-loss, else 0.3 for a model trained from scratch (it must learn to read product text;
    +8 points of HPD F1 on OA-Mine and WDC-PAVE in a 13-minute probe) and 0 for --base."""
    if args.lm_loss is not None:
        return args.lm_loss
    return 0.0 if args.base else 0.3


def phase_config(args, lr: float, steps: int, minutes: float, warmup: int) -> TrainConfig:
    """The optimiser settings of one training phase (focus or main) from the command line."""
    return TrainConfig(
        seed=args.seed,
        steps=steps,
        minutes=minutes,
        lr=lr,
        batch_tokens=args.batch_tokens,
        log_every=args.log_every,
        autocast=args.autocast,
        warmup=min(TrainConfig.warmup, max(1, warmup)),
        extractive_weight=args.extractive_loss,
        lm_weight=lm_weight(args),
    )


def run_train(args) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    torch.set_num_threads(args.threads)
    limit_fragmentation()  # resident memory stays flat across batches of changing shape
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus(args.data, Path(args.splits_dir))
    log.info(
        "training products: %d in %d schemas; dev: %s",
        corpus.size,
        len(corpus.groups),
        {k: len(v) for k, v in corpus.dev.items()},
    )
    if args.base and is_adapter(Path(args.base)):
        # a later stage: the same adapter trained further over the same base (its own rank)
        dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
        model, tokenizer = adapted_model(Path(args.base), dtype=dtype, trainable=True)
        lr = args.lr or 5e-5
    elif args.base:
        from transformers import AutoTokenizer

        base_vocab = len(AutoTokenizer.from_pretrained(args.base))
        model, tokenizer = load_base(args.base, args.device, add_value_end=not args.keep_vocab)
        lr = args.lr or 5e-5
        if args.lora:
            model = with_lora(model, list(range(base_vocab, len(tokenizer))), args.lora, args.lora_from)
    else:
        from .tokenizer_train import build_tokenizer

        tokenizer = build_tokenizer(tokenizer_texts(corpus), args.vocab_size)
        model = new_model(tokenizer, args.size, args.seed)
        lr = args.lr or 2e-3
    model.to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    n_trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    log.info(
        "model: %s, %.2fM parameters, %.2fM trained", type(model).__name__, n_params / 1e6, n_trainable / 1e6
    )
    formats = {f.strip() for f in args.formats.split(",") if f.strip()}
    p_hpd = 1.0 if formats == {"hpd"} else 0.0 if formats == {"ar"} else 0.5
    keep = {}
    for item in args.keep:
        name, _, share = item.partition("=")
        try:
            keep[name] = float(share)
        except ValueError:
            raise SystemExit(f"--keep {item!r}: expected NAME=SHARE, e.g. wdc-pave=0.4") from None
    row_cfg = RowConfig(row_tokens=args.row_tokens, p_hpd=p_hpd, keep=keep, choices=args.extractive_loss > 0)
    aug_cfg = (
        None
        if args.no_augment
        else aug.AugmentConfig(
            p_product=args.p_augment,
            p_attribute=args.p_attribute,
            p_mutate=args.p_mutate,
            p_phrase=args.p_phrase,
        )
    )
    sampler = RowSampler(corpus, tokenizer, row_cfg, aug_cfg, args.seed)
    cfg = phase_config(args, lr, args.steps, args.minutes, warmup=args.steps // 10)

    budgets = model_settings(corpus, tokenizer)

    def save(step: int) -> None:
        if hasattr(model, "peft_config"):
            # the adapter alone: the embedding rows it adds are trained tokens, saved as deltas
            model.save_pretrained(str(out), safe_serialization=True, save_embedding_layers=False)
        else:
            model.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))
        (out / "slotwise.json").write_text(json.dumps(budgets, indent=1, ensure_ascii=False) + "\n")
        log.info("checkpoint at step %d saved to %s", step, out)

    focus = None
    if args.focus_steps > 0:
        # A from-scratch model first learns each attribute's usual values and only much later to
        # read them from the document; a few products seen many times, in the HPD format alone and
        # unaugmented, push it to read the document sooner (one seed on 48 shoe titles: it read
        # the gender of unseen titles after 120 such steps, not with AR-JSON or augmentation mixed in)
        focus_corpus = focus_subset(corpus, args.focus_products, args.seed)
        focus_sampler = RowSampler(
            focus_corpus,
            tokenizer,
            RowConfig(row_tokens=args.row_tokens, p_hpd=1.0, choices=args.extractive_loss > 0),
            None,
            args.seed,
        )
        focus_cfg = phase_config(args, lr, args.focus_steps, 0.0, warmup=args.focus_steps // 5)
        log.info(
            "focus phase: %d products, HPD only, no augmentation, %d steps",
            focus_corpus.size,
            args.focus_steps,
        )
        focus = train_loop(model, focus_sampler, tokenizer.pad_token_id, focus_cfg, args.device)
    result = train_loop(model, sampler, tokenizer.pad_token_id, cfg, args.device, save, args.save_every)
    model.to("cpu")
    save(result["steps"])
    meta = {
        "command": "python -m extraction train " + " ".join(a for a in sys.argv[1:] if a != "train"),
        "base": args.base,
        "size": None if args.base else args.size,
        "parameters": n_params,
        "trained_parameters": n_trainable,
        "lora": {"rank": args.lora, "from_layer": args.lora_from} if args.lora else None,
        "formats": sorted(formats),
        "augment": None if aug_cfg is None else asdict(aug_cfg),
        "rows": asdict(row_cfg),
        "train": {k: v for k, v in asdict(cfg).items()},
        "threads": args.threads,
        "device": args.device,
        "data": {name: {"dev": len(dev)} for name, dev in corpus.dev.items()},
        "train_products": corpus.size,
        "focus": None
        if focus is None
        else {
            "products_per_schema": args.focus_products,
            "steps": focus["steps"],
            "seconds": focus["seconds"],
            "tokens": focus["tokens"],
        },
        **result,
    }
    (out / "training.json").write_text(json.dumps(meta, indent=2) + "\n")
    log.info("saved %s (%d steps, %.1f min)", out, result["steps"], result["seconds"] / 60)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m extraction.engine.train")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_train_parser(sub)
    args = parser.parse_args(["train", *(argv if argv is not None else sys.argv[1:])])
    return run_train(args)


if __name__ == "__main__":
    raise SystemExit(main())
