"""Row packing: one schema's prefix and several of its documents per training row, padded into
batches of rows of similar length.

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
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch

from catalog.kinds import ENUM
from extraction.domain import DEFAULT_TOKEN_BUDGET
from extraction.engine.decode import extractive as span
from extraction.engine.decode.constraints import choice_rule
from extraction.engine.layout import (
    NA,
    AttributeSpec,
    ar_target,
    attribute_line,
    build_hpd_layout,
    doc_ids,
    schema_prompt,
    value_ids,
    with_values_listed,
)
from extraction.engine.splits import IMPLICIT, NORMALIZED, OPTIONS
from extraction.engine.train import augment as aug
from extraction.engine.train.corpus import Corpus, Example, to_example

IGNORE = -100  # label of a token without loss (PyTorch cross_entropy's ignore_index)


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
    weight: float = 1.0  # the weight of this row's value losses (its data set's, RowConfig.weights)


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
    return walk_allowed(span.SpanState(index, na, end), target, list)


def walk_allowed(state, target: list[int], as_list) -> list[list[int]] | None:
    """Walk a constraint state along target: the tokens it allows before each token (as_list turns
    its allowed() into a list of ids), None as soon as target leaves what it allows."""
    out = []
    for i, tok in enumerate(target):
        allowed = as_list(state.allowed())
        if tok not in allowed:
            return None
        out.append(allowed)
        if i < len(target) - 1:
            state.push(tok)
    return out


_RULES: dict[tuple[int, tuple[str, ...]], object] = {}  # (tokenizer, values) -> its choice trie


def enum_choices(tokenizer, values: list[str], target: list[int], end: int) -> list[list[int]] | None:
    """For each token of an enumeration value (value ids + end token): the tokens its choice trie
    allows there, as the decoders constrain the slot (constraints.choice_rule; no "n/a", as
    evaluate decodes ImplicitAVE). None when the value is not one of them."""
    key = (id(tokenizer), tuple(values))
    if key not in _RULES:
        _RULES[key] = choice_rule(tokenizer, values, None)
    return walk_allowed(_RULES[key].start(None, end), target, lambda ids: ids.tolist())


def choices_of(index, tokenizer, schema, ex: Example, name: str, target: list[int]) -> list[list[int]] | None:
    """What the decoder allows at each token of ex's value of name: its enumeration's trie where ex
    lists one (ImplicitAVE), else the extractive span rule (index: the document's)."""
    if ex.options and name in ex.options:
        return enum_choices(tokenizer, ex.options[name], target, schema.terminator)
    return value_choices(index, target, schema.na_ids, schema.terminator)


@dataclass
class Appended:
    """One HPD value teacher-forced after the documents: its tokens at their slot positions."""

    ids: list[int]
    positions: list[int]
    doc: int
    slot: int
    labels: list[int]
    choices: list[list[int]] | None


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
    lay = build_hpd_layout(schema, texts)  # the one row builder, as at inference
    T = len(lay.input_ids)
    row = Row(
        input_ids=list(lay.input_ids),
        position_ids=list(lay.position_ids),
        doc_ids=list(lay.doc_ids),
        slot_ids=list(lay.slot_ids),
        labels=[IGNORE] * T,
        n_hpd=len(hpd),
        n_ar=len(ar),
        lm_labels=[IGNORE] * T,
    )
    for j, text in enumerate(texts):
        first = lay.doc_ids.index(j)
        row.lm_labels[first : first + len(text) - 1] = text[1:]
    appended = [
        v for j, ex in enumerate(hpd) for v in hpd_values_of(tokenizer, schema, lay, row, j, ex, with_choices)
    ]
    for i, ex in enumerate(ar):
        append_ar_document(tokenizer, schema, lay.prefix_len, row, len(hpd) + i, ex, with_choices)
    for value in appended:
        for i, allowed in enumerate(value.choices or []):
            row.choices[len(row.input_ids) + i] = allowed
        row.input_ids += value.ids
        row.position_ids += value.positions
        row.doc_ids += [value.doc] * len(value.ids)
        row.slot_ids += [value.slot] * len(value.ids)
        row.labels += value.labels
        row.lm_labels += [IGNORE] * len(value.labels)
    return row


def hpd_values_of(
    tokenizer, schema, lay, row: Row, j: int, ex: Example, with_choices: bool
) -> list[Appended]:
    """HPD document j's judged values: the first token's label on its key's last token (in row),
    the rest to append after the documents."""
    specs = schema.attributes
    index = span.doc_index(tokenizer, ex.text) if with_choices else None
    out = []
    for n, target in enumerate(hpd_values(tokenizer, specs, ex.gold, schema.terminator)):
        if target is None:
            continue
        if len(target) - 1 > specs[n].max_tokens:
            raise ValueError(f"value of {specs[n].name!r} longer than its gap")
        row.labels[lay.key_end[j][n]] = target[0]
        allowed = (
            choices_of(index, tokenizer, schema, ex, specs[n].name, target) if index is not None else None
        )
        if allowed:
            row.choices[lay.key_end[j][n]] = allowed[0]
        k = len(target) - 1
        positions = [lay.slot_start[j][n] + i for i in range(k)]
        out.append(Appended(target[:-1], positions, j, n, target[1:], allowed[1:] if allowed else None))
    return out


def append_ar_document(tokenizer, schema, prefix_len: int, row: Row, j: int, ex: Example, with_choices: bool):
    """An AR document: its own doc id, prompt slots, positions restarting after the prefix; loss on
    the judged tokens of its JSON target (layout.ar_target)."""
    prompt = doc_ids(tokenizer, ex.text)
    target = ar_target(tokenizer, schema, ex.gold)
    if with_choices and schema.value_end_in_ar:
        index = span.doc_index(tokenizer, ex.text)
        first = len(row.input_ids) + len(prompt) - 1  # index whose label is target.ids[0]
        judged = [
            a.name for a in schema.attributes if ex.gold.get(a.name) is not None
        ]  # target.values' order
        for name, (at, vids) in zip(judged, target.values, strict=True):
            allowed = choices_of(index, tokenizer, schema, ex, name, vids)
            for i, a in enumerate(allowed or []):
                row.choices[first + at + i] = a
    seq = prompt + target.ids
    row.lm_labels += prompt[1:] + [IGNORE] * (len(target.ids) + 1)
    row.input_ids += seq
    row.position_ids += list(range(prefix_len, prefix_len + len(seq)))
    row.doc_ids += [j] * len(seq)
    row.slot_ids += [-1] * len(seq)
    # label at index t = token t+1 of the sequence; only target tokens that are judged
    judged = [tok if keep else IGNORE for tok, keep in zip(target.ids, target.keep, strict=True)]
    row.labels += [IGNORE] * (len(prompt) - 1) + judged + [IGNORE]


def collate(
    rows: list[Row], pad_id: int, vocab_size: int | None = None, sparse_choices: bool = False
) -> dict[str, torch.Tensor]:
    """Right-pad rows (doc = slot = -2, position 0, no loss).

    With vocab_size, also "choices": bool [M, V] over the M labeled tokens (row-major order, as
    training_logits selects them), True where extractive decoding allows a token there; a row of
    all True where it does not constrain the token (keys, JSON punctuation, values off the text).
    sparse_choices: the same as "choice_free" (bool [M], the unconstrained tokens) and
    "choice_pairs" ([2, N]: labeled token, allowed token id; by token), for train/head_loss.py."""
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
    # one weight per labeled token (row-major, as training_logits selects them)
    batch["weights"] = torch.tensor(
        [r.weight for r in rows for lab in r.labels if lab != IGNORE], dtype=torch.float32
    )
    if vocab_size is not None:
        allowed: list[list[int] | None] = []
        for r in rows:
            allowed += [r.choices.get(t) for t, lab in enumerate(r.labels) if lab != IGNORE]
        if sparse_choices:
            batch["choice_free"] = torch.tensor([a is None for a in allowed], dtype=torch.bool)
            pairs = [(m, t) for m, a in enumerate(allowed) if a is not None for t in a]
            batch["choice_pairs"] = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).T.contiguous()
        else:
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
    # data set -> weight of its value losses (distant labels are noisy: weighed below people's)
    weights: dict[str, float] = field(default_factory=dict)
    # compact rows: a row's keys are the attributes its products judge from their gold (a value
    # or a gold "n/a"), plus at most this many of those only inferred absent (OA-Mine's untagged
    # attributes), drawn per row (0: every judged attribute)
    absent_keys: int = 0
    choices: bool = False  # record what extractive decoding allows at each value token (Row.choices)


def present(ex: Example) -> list[str]:
    """The attributes ex holds a value for (neither absent nor unjudged)."""
    return [a for a, v in ex.gold.items() if v not in (None, NA)]


def restricted(ex: Example, keys: list[str]) -> Example:
    """ex judged on keys only."""
    gold = {a: v for a, v in ex.gold.items() if a in keys}
    return Example(
        ex.text,
        ex.category,
        gold,
        ex.source,
        ex.options,
        tuple(a for a in ex.untagged if a in keys),
        ex.descriptions,
    )


def _fit_text(tokenizer, text: str, max_tokens: int) -> str:
    words = text.split()
    while words and len(doc_ids(tokenizer, " ".join(words))) > max_tokens:
        words = words[: max(1, int(len(words) * 0.9))] if len(words) > 1 else []
    return " ".join(words)


def prompted_spec(name: str, exs: list[Example], gap: int = DEFAULT_TOKEN_BUDGET) -> AttributeSpec:
    """name's spec as its prompt line reads in a row of exs: an enumeration where they list its
    values (the line lists them, as the Extractor writes it), with its description where they give
    one (WDC-PAVE's normalization instructions)."""
    values = next((ex.options[name] for ex in exs if ex.options and name in ex.options), None)
    said = next((ex.descriptions[name] for ex in exs if ex.descriptions and name in ex.descriptions), "")
    if values:
        return with_values_listed(AttributeSpec(name, said, gap, kind=ENUM, allowed_values=tuple(values)))
    return AttributeSpec(name, said, gap)


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
        vals = sum(self._ntok(ex.gold.get(s.name) or NA) for s in specs)
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
                if (
                    self.aug_cfg is not None
                    and key[0] not in (IMPLICIT, NORMALIZED)
                    and not record.get(OPTIONS)
                ):
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
            exs.sort(key=lambda ex: tuple(sorted(present(ex))))
            packed = self._pack(names, exs)
            for row in packed:
                row.weight = self.cfg.weights.get(key[0], 1.0)
            rows += packed
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
            specs.append(prompted_spec(name, exs, gap))
        return specs

    def _pack(self, names: list[str], exs: list[Example]) -> list[Row]:
        rows, i = [], 0
        base_specs = [AttributeSpec(n) for n in names]
        # the prefix lists the row's attributes: its instruction, then a line per name as it joins
        # (a schema of 1,007 names, ae-110k-distant's, must not count as every row's prefix)
        instruction = len(schema_prompt(self.tok, []).prefix_ids)
        while i < len(exs):
            hpd, ar, used, listed = [], [], instruction, set()
            while i < len(exs):
                is_hpd = self.rng.random() < self.cfg.p_hpd
                own = self._own_specs(base_specs, exs[i])
                # a line as the prompt writes it (an enumeration's values and a description count)
                lines = sum(
                    self._ntok(attribute_line(prompted_spec(s.name, exs[i : i + 1])))
                    for s in own
                    if s.name not in listed
                )
                need = self._length(exs[i], own, is_hpd) + lines
                if (hpd or ar) and used + need > self.cfg.row_tokens:
                    break
                (hpd if is_hpd else ar).append(exs[i])
                listed.update(s.name for s in own)
                used += need
                i += 1
            keys = self._row_keys(names, hpd + ar)
            gold_of = [ex if not self.cfg.absent_keys else restricted(ex, keys) for ex in hpd + ar]
            specs = self._specs(keys, gold_of)
            rows.append(
                build_row(self.tok, specs, gold_of[: len(hpd)], gold_of[len(hpd) :], self.cfg.choices)
            )
        return rows

    def _own_specs(self, base_specs: list[AttributeSpec], ex: Example) -> list[AttributeSpec]:
        """The keys ex brings to a row (for its length estimate)."""
        if not self.cfg.absent_keys:
            return [s for s in base_specs if s.name in ex.gold]
        inferred = [s for s in base_specs if s.name in ex.untagged]
        return [s for s in base_specs if s.name in ex.gold and s.name not in ex.untagged] + inferred[
            : self.cfg.absent_keys
        ]

    def _row_keys(self, names: list[str], exs: list[Example]) -> list[str]:
        """The row's attributes: every judged one, or (compact rows) those some product judges from
        its gold plus up to absent_keys drawn from those only inferred absent."""
        judged = [n for n in names if any(n in ex.gold for ex in exs)] or names
        if not self.cfg.absent_keys:
            return judged
        valued = {n for ex in exs for n in ex.gold if n not in ex.untagged}
        absent = [n for n in judged if n not in valued]
        drawn = set(self.rng.sample(absent, min(len(absent), self.rng.randint(1, self.cfg.absent_keys))))
        return [n for n in judged if n in valued or n in drawn] or judged

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
