"""The training corpus and what it says about the model: products grouped by schema, value pools
for augmentation, and the settings the training command writes to the model's slotwise.json
(token budgets, extractive decoding, boundary rules)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from extraction.engine.data import product_text
from extraction.engine.decode import extractive as span
from extraction.engine.layout import NA, AttributeSpec, doc_text, key_text, prefix_text, value_ids
from extraction.engine.splits import (
    ABSENT_WHEN_UNTAGGED,
    DESCRIPTIONS_KEY,
    IMPLICIT,
    OPTIONS,
    SPLITS_DIR,
    document_key,
    load_split,
    resolve_data_dirs,
)
from extraction.engine.train import augment as aug

EXTRACTIVE_SHARE = 0.95  # values verbatim in their document from which a model decodes extractively
# an attribute gets a boundary rule (word / compound ends, compound starts) only when nearly all its
# training values obey it (word ends: OA-Mine 7,357 of 7,360 values; AE-110k's "Gender" is often
# "Men" of "Mens": 89%)
BOUNDARY_SHARE = 0.99
BOUNDARY_MIN_VALUES = 20  # fewer values: no rule (a few values prove little)
# The default_budget a trained model carries (for attributes its training never saw): 16 is
# row_packing.RowConfig's min_gap 4 + gap_extra 12, the widest gap a short value meets in
# training. Kept apart from domain.DEFAULT_TOKEN_BUDGET (12: when neither schema nor model gives one)
# because the shipped models' slotwise.json carry 16 and retraining should reproduce them.
TRAINED_DEFAULT_BUDGET = 16


@dataclass
class Example:
    """One training product: document text, category, gold (attr -> value text, NA or None)."""

    text: str
    category: str
    gold: dict[str, str | None]
    source: str = ""
    options: dict[str, list[str]] | None = None  # closed value lists: these attributes are enumerations
    untagged: tuple[str, ...] = ()  # attributes whose "n/a" was inferred (with_absent), not in the gold
    descriptions: dict[str, str] | None = None  # attribute -> its description in the prompt


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
    category = str(record.get("category", ""))
    untagged = tuple(record.get(UNTAGGED, ()))
    return Example(
        record_text(record),
        category,
        record_gold(record),
        source,
        record.get(OPTIONS),
        untagged,
        record.get(DESCRIPTIONS_KEY),
    )


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
    splits = [load_split(d, splits_dir=splits_dir, write=write_splits) for d in resolve_data_dirs(data)]
    return corpus_of(splits)


def corpus_of(splits: list) -> Corpus:
    """The corpus of these splits (splits.Split: a data set's train and dev records), grouped by
    (data set, category); a catalog's reviewed gold joins as a split of its own (engine/train/fine_tune.py)."""
    corpus = Corpus()
    # no dev document enters training through another data set (the distant sets were built
    # disjoint from every dev title; this keeps that true whatever is named together)
    dev_docs = {document_key(r) for split in splits for r in split.dev}
    for split in splits:
        corpus.dev[split.name] = split.dev
        train = [r for r in split.train if document_key(r) not in dev_docs]
        corpus.pools[split.name] = aug.value_pools(train)
        corpus.phrases[split.name] = aug.phrase_pool(train)
        for record in train:
            key = (split.name, str(record.get("category", "")))
            corpus.groups.setdefault(key, []).append(record)
            names = corpus.schemas.setdefault(key, [])
            for attr in record.get("target_scores", {}):
                if attr not in names:
                    names.append(attr)
    for key, records in corpus.groups.items():
        if key[0] in ABSENT_WHEN_UNTAGGED:
            corpus.groups[key] = [with_absent(r, corpus.schemas[key]) for r in records]
    return corpus


UNTAGGED = "untagged"  # a record's attributes made "n/a" by with_absent (not said by its gold)


def with_absent(record: dict, names: list[str]) -> dict:
    """record with every schema attribute it does not tag as "n/a" (ABSENT_WHEN_UNTAGGED), those
    names listed under UNTAGGED (compact rows keep only a few of them, never a gold "n/a")."""
    scores = dict(record.get("target_scores", {}))
    untagged = [name for name in names if name not in scores]
    for name in untagged:
        scores[name] = {NA: 1}
    return {**record, "target_scores": scores, UNTAGGED: untagged}


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
        "default_budget": TRAINED_DEFAULT_BUDGET,
        "note": "longest training value in tokens + 2, clamped to [4, 48]; training saw gaps up to +12",
    }


def verbatim_share(corpus: Corpus) -> float:
    """Share of the present training values that occur verbatim in their document, over the
    records of text spans (enumerations, ImplicitAVE's implied values and WDC-PAVE's normalized
    categories, decode under their closed list instead)."""
    found = total = 0
    for (source, _category), records in corpus.groups.items():
        if source == IMPLICIT:
            continue
        for record in records:
            if record.get(OPTIONS):
                continue
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
    listed = any(OPTIONS in r for records in corpus.groups.values() for r in records[:1])
    return {
        # enumerations (ImplicitAVE's, with its options) were trained with their values listed in
        # the prompt (layout.with_values_listed): the Extractor lists them too
        "enum_values_in_prompt": listed,
        **attribute_budgets(corpus, tokenizer),
        "extractive": share >= EXTRACTIVE_SHARE,
        "verbatim_share": round(share, 4),
        "word_end": boundary_attributes(corpus),
        "compound_end": boundary_attributes(corpus, span.COMPOUND),
        "compound_start": boundary_attributes(corpus, span.COMPOUND, "start"),
    }
