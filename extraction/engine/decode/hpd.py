"""Hyper-parallel decoding: one prefill, then one forward step per value token (or several, with
lookahead) for every open slot of every stacked document of every batch row.

    prefill_prefix   shared instruction prefix, once per schema -> cache [1, H, P, D]
    build_rows       per row: J documents (layout.build_hpd_layout: doc + keys with gaps), padded
    prefill_rows     docs of all rows in one forward; logits at each key's last token = token 1 of every value
    decode_step      one forward for the open slots (compacted per row), each with its lookahead drafts
                     (lookahead.py) -> next token(s), read while the drafts are confirmed; finished slots leave
    collect          tokens -> SlotValue (ids, logprobs, truncated)

The slot constraint is a hook (Greedy, or Constrained over batched_constraints.py): it turns a step's
logits into the chosen tokens, so prefill and steps pick tokens through one function. Only queries
of open slots reach the model's head and the hook: the padding a row needs to be rectangular is
never projected onto the vocabulary (and under block attention never enters the model at all).

Attention is one of two paths with the same three-part mask (HPD.md): block_attention.py (the
default) computes a query's scores against the prefix, its own document and its own slot only;
dense_attention.py scores whole rows under masks.py's mask (the reference, and the fallback for a
model whose layers do not dispatch through transformers' attention interface).

The fork baseline runs through the same code: one row per (document, attribute), holding the
document, keys 0..n, and a single slot n. decode returns values indexed by document either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from extraction.engine.decode import constraints, masks
from extraction.engine.decode import extractive as span
from extraction.engine.decode import lookahead as drafting
from extraction.engine.decode.batched_constraints import BatchedConstraint
from extraction.engine.decode.block_attention import BlockRows, NotDispatched
from extraction.engine.decode.dense_attention import DenseRows
from extraction.engine.decode.lookahead import Lookahead
from extraction.engine.decode.token_masks import greedy_log_softmax, masked_choice
from extraction.engine.layout import PAD, SchemaPrompt, build_hpd_layout
from extraction.engine.modeling import forward_hidden, logits, new_cache


@dataclass
class SlotValue:
    ids: list[int]  # value tokens, terminator excluded
    logprobs: list[float]  # one per generated token (terminator included when emitted)
    steps: int  # tokens decoded for this slot, its terminator included (one step each without lookahead)
    truncated: bool  # filled its gap without a terminator


@dataclass
class RowDoc:
    """One document inside a row: its token ids, how many keys to lay out, which slots to decode,
    and its index among the documents decoded (results come back by it)."""

    doc: list[int]
    n_keys: int
    slots: list[int]
    span: span.DocIndex | None = None  # the product text (extractive decoding), else None
    index: int = 0


@dataclass
class Counters:
    forward_steps: int = 0
    tokens_decoded: int = 0
    prefill_tokens: int = 0
    rows_dropped: int = 0  # rows that left the decode early (all their slots finished)
    drafted: int = 0  # lookahead draft tokens fed (lookahead.py)
    accepted: int = 0  # of them, those the step's own choice confirmed
    max_steps_per_row_batch: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------------- rows


@torch.no_grad()
def prefill_prefix(model, prefix_ids: list[int], device) -> torch.Tensor:
    """Run the shared prefix once -> its cache (a DynamicCache with batch 1)."""
    cache = new_cache()
    ids = torch.tensor([prefix_ids], device=device)  # [1, P]
    pos = torch.arange(len(prefix_ids), device=device)[None]  # [1, P]
    mask = masks.causal_mask(1, len(prefix_ids), len(prefix_ids), model.dtype, device)
    forward_hidden(model, ids, pos, mask, cache)
    return cache


@dataclass
class Rows:
    """Tensors of one batch of rows (prefix excluded from memory, counted in positions)."""

    input_ids: torch.Tensor  # [B, L]
    position_ids: torch.Tensor  # [B, L]
    doc_ids: torch.Tensor  # [B, L]  PAD for padding
    slot_index: torch.Tensor  # [B, S] index (in L) of the last key token of each slot
    slot_start: torch.Tensor  # [B, S] position of each slot's first value token
    slot_gap: torch.Tensor  # [B, S] token budget
    slot_doc: torch.Tensor  # [B, S] doc id within the row (PAD for missing slots)
    slot_valid: torch.Tensor  # [B, S] bool
    owner: list[list[tuple[int, int]]]  # [B][S] (row-doc index, attribute) of each slot
    span: list[list[span.DocIndex | None]] = field(default_factory=list)  # [B][S] documents for extractive
    document: list[list[int]] = field(default_factory=list)  # [B][S] RowDoc.index of each slot
    doc_tokens: torch.Tensor | None = None  # [B, J, Ld] each document's tokens (-1: padding), for lookahead


def _padded(rows_: list[list], value, device) -> torch.Tensor:
    width = max(len(r) for r in rows_)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows_], device=device)


def build_rows(schema: SchemaPrompt, rows: list[list[RowDoc]], pad_id: int, device) -> Rows:
    lays = [
        build_hpd_layout(schema, [rd.doc for rd in row], False, [rd.n_keys for rd in row]) for row in rows
    ]
    # per row: (doc in row j, attribute n) of every decoded slot, and the slot's RowDoc
    slots = [[(j, n) for j, rd in enumerate(row) for n in rd.slots] for row in rows]
    slot_docs = [[row[j] for j, _ in s] for row, s in zip(rows, slots, strict=True)]
    keyed = list(zip(lays, slots, strict=True))
    return Rows(
        input_ids=_padded([lay.input_ids for lay in lays], pad_id, device),
        position_ids=_padded([lay.position_ids for lay in lays], 0, device),
        doc_ids=_padded([lay.doc_ids for lay in lays], PAD, device),
        slot_index=_padded([[lay.key_end[j][n] for j, n in s] for lay, s in keyed], 0, device),
        slot_start=_padded([[lay.slot_start[j][n] for j, n in s] for lay, s in keyed], 0, device),
        slot_gap=_padded([[schema.attributes[n].max_tokens for _, n in s] for s in slots], 0, device),
        slot_doc=_padded([[j for j, _ in s] for s in slots], PAD, device),
        slot_valid=_padded([[True] * len(s) for s in slots], False, device),
        owner=slots,
        span=[[rd.span for rd in r] for r in slot_docs],
        document=[[rd.index for rd in r] for r in slot_docs],
        doc_tokens=_doc_tokens(rows, device),
    )


def _doc_tokens(rows: list[list[RowDoc]], device) -> torch.Tensor:
    J = max(len(row) for row in rows)
    L = max(len(rd.doc) for row in rows for rd in row)
    out = torch.full((len(rows), J, L), -1, dtype=torch.long)
    for b, row in enumerate(rows):
        for j, rd in enumerate(row):
            out[b, j, : len(rd.doc)] = torch.tensor(rd.doc, dtype=torch.long)
    return out.to(device)


# ---------------------------------------------------------------------------------- token choice hooks


class Greedy:
    """Unconstrained greedy choice."""

    def choose(self, scores, rows, slots):
        """scores [N, V] float32 logits of N queries, query i for slot slots[i] of batch row rows[i]
        -> (tokens, their log-probabilities) [N]."""
        return greedy_log_softmax(scores)


class Constrained(Greedy):
    """Every slot under its attribute's constraint (constraints.slot_rules: by default a substring of
    its document, RowDoc.span, or "n/a"): disallowed tokens get -inf before the argmax, and a value's
    confidence comes from the log-softmax over the allowed tokens (token_masks.masked_choice).
    The slots' states live in one batched_constraints.BatchedConstraint (slot b * S + s: tensor ops
    per step, no Python per slot), indexed by batch row, so rows that drop_finished removed change
    nothing here."""

    def __init__(self, rows: Rows, schema: SchemaPrompt):
        self.width = rows.slot_valid.shape[1]
        self.slots = BatchedConstraint(slot_specs(rows, schema), rows.input_ids.device)

    def choose(self, scores, rows, slots):
        idx = rows * self.width + slots
        tok, tok_lp = masked_choice(scores, *self.slots.allowed(idx, scores.shape[-1]))
        self.slots.push(idx, tok)  # the terminator is not pushed
        return tok, tok_lp


def slot_specs(rows: Rows, schema: SchemaPrompt) -> list[tuple[object, span.DocIndex | None, int]]:
    """(rule, document, end token) of every slot b * S + s (constraints.slot_rules; rule None for
    padding slots and free values: unconstrained)."""
    rules = constraints.slot_rules(schema)
    valid = rows.slot_valid.tolist()
    out = []
    for b, row in enumerate(valid):
        for s, ok in enumerate(row):
            rule = rules[rows.owner[b][s][1]] if ok else None  # the slot's attribute
            out.append((rule, rows.span[b][s] if ok else None, schema.terminator))
    return out


# ---------------------------------------------------------------------------------- decode


@dataclass
class Decoding:
    """One batch of rows while its slots decode. Rows whose slots all finished leave (drop_finished):
    row_map says which batch row each active row is; out_tok / out_lp stay indexed by batch row."""

    attn: BlockRows | DenseRows  # the rows' attention entries (and masks)
    open_: torch.Tensor  # [B', S] slots still decoding
    last: torch.Tensor  # [B', S] each slot's last token
    fed: torch.Tensor  # [B', S] value tokens fed back so far
    start: torch.Tensor  # [B', S] position of each slot's first value token
    gap: torch.Tensor  # [B', S] token budget
    row_map: torch.Tensor  # [B'] active row -> row of the batch
    out_tok: torch.Tensor  # [B, S, G+1] chosen tokens (-1 = none)
    out_lp: torch.Tensor  # [B, S, G+1] their log-probabilities
    steps: int = 0
    lookahead: Lookahead | None = None  # drafts per step (block attention only), None: one token
    docs: torch.Tensor | None = None  # [B, J, Ld] Rows.doc_tokens (the drafts' source)
    slot_doc: torch.Tensor | None = None  # [B, S] Rows.slot_doc


ATTENTION = {"blocks": BlockRows, "dense": DenseRows}
LOOKAHEAD = Lookahead()  # the default: drafts on (block attention)


def prefill_rows(
    model,
    schema: SchemaPrompt,
    prefix_cache,
    rows: Rows,
    hook: Greedy,
    counters: Counters,
    attention="blocks",
    lookahead: Lookahead | None = None,
):
    """Prefill the rows after the shared prefix; every slot's first token comes from its key's last
    token. -> the Decoding state. attention: "blocks" (falls back to "dense" for a model whose
    layers do not all call the attention interface) or "dense"; lookahead: the steps' drafts
    (lookahead.py; dense rows decode without)."""
    device = rows.input_ids.device
    B, L = rows.input_ids.shape
    S = rows.slot_index.shape[1]
    max_gap = int(rows.slot_gap.max())
    attn = ATTENTION[attention](prefix_cache, rows, max_gap)
    try:
        hidden = attn.prefill(model, rows)  # [B, L, D]
    except NotDispatched:
        attn = DenseRows(prefix_cache, rows, max_gap)
        hidden = attn.prefill(model, rows)
    counters.forward_steps += 1
    counters.prefill_tokens += B * L
    counters.tokens_decoded += int(rows.slot_valid.sum())
    live = rows.slot_valid.nonzero(as_tuple=True)  # (batch row, slot) of every real slot
    at_keys = hidden[live[0], rows.slot_index[live]]  # [N, D] each slot's last key token
    tok_live, lp_live = hook.choose(logits(model, at_keys), *live)
    out_tok = torch.full((B, S, max_gap + 1), -1, dtype=torch.long, device=device)
    out_lp = torch.zeros((B, S, max_gap + 1), dtype=torch.float32, device=device)
    out_tok[live[0], live[1], 0], out_lp[live[0], live[1], 0] = tok_live, lp_live
    # [B, S]; padding slots (never open) get token 0: dense rows still embed their padding queries
    tok = out_tok[:, :, 0].clamp(min=0)
    return Decoding(
        attn=attn,
        open_=rows.slot_valid & (tok != schema.terminator) & (rows.slot_gap > 0),
        last=tok,
        fed=torch.zeros((B, S), dtype=torch.long, device=device),
        start=rows.slot_start,
        gap=rows.slot_gap,
        row_map=torch.arange(B, device=device),
        out_tok=out_tok,
        out_lp=out_lp,
        lookahead=lookahead if isinstance(attn, BlockRows) else None,
        docs=rows.doc_tokens,
        slot_doc=rows.slot_doc,
    )


def drop_finished(d: Decoding, n_open: torch.Tensor, counters: Counters) -> None:
    """Once half the active rows have finished, drop the finished ones from the cache and the state
    (fewer rows in every later forward)."""
    if int((n_open > 0).sum()) > len(d.row_map) // 2:
        return
    keep = (n_open > 0).nonzero().squeeze(1)  # [B'']
    counters.rows_dropped += len(d.row_map) - len(keep)
    d.attn.select_rows(keep)
    for name in ("open_", "last", "fed", "start", "gap", "row_map"):
        setattr(d, name, getattr(d, name)[keep])


def decode_step(model, d: Decoding, hook: Greedy, schema: SchemaPrompt, counters: Counters) -> None:
    """One forward for every open slot: its last token in (and its lookahead drafts after it), its
    next token(s) out. Output i of a slot is chosen as a one-token step would choose it, and read
    only while every draft before it was confirmed (lookahead.py)."""
    term = schema.terminator
    r, s = d.open_.nonzero(as_tuple=True)  # open slots, row-major
    b = d.row_map[r]
    if d.lookahead is None:
        drafts = torch.empty((len(r), 0), dtype=torch.long, device=r.device)
    else:
        docs = d.docs[b, d.slot_doc[b, s]]  # [M, Ld]
        drafts = drafting.propose(
            d.lookahead, d.out_tok[b, s], d.fed[r, s], d.gap[r, s], docs, schema.na_ids, term
        )
    none = torch.full((len(r), 1), -1, dtype=torch.long, device=r.device)  # past the drafts: no match
    tokens = torch.cat([d.last[r, s][:, None], drafts, none], 1)
    n = 1 + (drafts >= 0).sum(1)  # queries per open slot
    ids, pos, order, valid, fed = drafting.queries(r, s, tokens, n, d.fed, d.start, len(d.row_map))
    hidden = d.attn.step(model, ids, pos, order, valid, fed)  # [Nq, D] the queries, row-major
    counters.forward_steps += 1
    counters.drafted += int(n.sum()) - len(n)
    d.steps += 1
    first = n.cumsum(0) - n  # each slot's first query in hidden
    reading = torch.ones_like(n, dtype=torch.bool)
    for i in range(int(n.max())):
        m = (reading & (i < n)).nonzero().squeeze(1)
        if len(m) == 0:
            break
        tok, lp = hook.choose(logits(model, hidden[first[m] + i]), b[m], s[m])  # [M']
        j = d.fed[r[m], s[m]] + 1  # the token number chosen
        d.out_tok[b[m], s[m], j], d.out_lp[b[m], s[m], j] = tok, lp
        d.fed[r[m], s[m]], d.last[r[m], s[m]] = j, tok
        counters.tokens_decoded += len(m)
        counters.accepted += len(m) if i else 0
        reading[m] = drafting.confirmed(tok, tokens[m, i + 1], term, j, d.gap[r[m], s[m]])
    d.open_ = d.open_ & (d.last != term) & (d.fed < d.gap)


@torch.no_grad()
def decode_rows(
    model,
    schema: SchemaPrompt,
    prefix_cache,
    rows: Rows,
    counters: Counters,
    max_steps: int | None = None,
    clock: list[float] | None = None,
    extractive: bool = False,
    attention: str = "blocks",
    lookahead: Lookahead | None = LOOKAHEAD,
) -> list[list[SlotValue]]:
    """Prefill the rows after the shared prefix, then decode every slot greedily. -> [B][S] values.
    max_steps stops early and clock collects a timestamp after each forward (layout cost probes).
    extractive: decode every slot under its attribute's constraint (Constrained); attention: the
    attention path (ATTENTION); lookahead: drafts verified per step (lookahead.py), None: off."""
    device = rows.input_ids.device
    hook = Constrained(rows, schema) if extractive else Greedy()
    d = prefill_rows(model, schema, prefix_cache, rows, hook, counters, attention, lookahead)
    tick(clock, device)
    while max_steps is None or d.steps < max_steps:
        n_open = d.open_.sum(1)  # [B']
        if int(n_open.max()) == 0:
            break
        drop_finished(d, n_open, counters)
        decode_step(model, d, hook, schema, counters)
        tick(clock, device)
    counters.max_steps_per_row_batch.append(d.steps)
    return collect(d.out_tok.tolist(), d.out_lp.tolist(), rows.slot_valid.tolist(), schema.terminator)


def tick(clock: list[float] | None, device) -> None:
    if clock is not None:
        if device.type == "cuda":
            torch.cuda.synchronize()
        clock.append(time.perf_counter())


def collect(tokens, lps, valid, term: int) -> list[list[SlotValue]]:
    """[B][S][G+1] token ids (-1 = none) -> values; a value without a terminator is truncated."""
    out = []
    for row_t, row_l, row_v in zip(tokens, lps, valid, strict=True):
        vals = []
        for t, lp, ok in zip(row_t, row_l, row_v, strict=True):
            if not ok:
                vals.append(SlotValue([], [], 0, False))
                continue
            n = next((i for i, x in enumerate(t) if x < 0), len(t))
            t, lp = t[:n], lp[:n]
            if term in t:
                k = t.index(term)
                vals.append(SlotValue(t[:k], lp[: k + 1], k + 1, False))
            else:  # gap filled: the last prediction (not a terminator) is dropped
                vals.append(SlotValue(t[: n - 1], lp[: n - 1], n, True))
        out.append(vals)
    return out


# ---------------------------------------------------------------------------------- documents -> rows


def hpd_rows(
    docs: list[list[int]], n_attr: int, stack: int, spans: list[span.DocIndex] | None = None
) -> list[list[RowDoc]]:
    """Group documents J at a time into rows (every slot of every document decoded).
    spans: extractive.doc_index of each document's text (needed for extractive decoding)."""
    all_slots = list(range(n_attr))
    spans_ = spans if spans is not None else [None] * len(docs)
    docs_ = [RowDoc(d, n_attr, all_slots, sp, i) for i, (d, sp) in enumerate(zip(docs, spans_, strict=True))]
    return [docs_[i : i + stack] for i in range(0, len(docs_), stack)]


def fork_rows(
    docs: list[list[int]], n_attr: int, spans: list[span.DocIndex] | None = None
) -> list[list[RowDoc]]:
    """One row per (document, attribute): the document, keys 0..n, slot n (the fork baseline)."""
    spans_ = spans if spans is not None else [None] * len(docs)
    return [
        [RowDoc(d, n + 1, [n], sp, i)]
        for i, (d, sp) in enumerate(zip(docs, spans_, strict=True))
        for n in range(n_attr)
    ]


def decode(
    model,
    schema: SchemaPrompt,
    prefix_cache,
    rows: list[list[RowDoc]],
    batch_rows: int,
    pad_id: int,
    counters: Counters,
    extractive: bool = False,
    attention: str = "blocks",
    lookahead: Lookahead | None = LOOKAHEAD,
) -> list[dict[int, SlotValue]]:
    """Decode rows batch_rows at a time -> per document (RowDoc.index) {attribute: value}."""
    device = next(model.parameters()).device
    out: list[dict[int, SlotValue]] = [
        {} for _ in range(1 + max((rd.index for row in rows for rd in row), default=-1))
    ]
    for i in range(0, len(rows), batch_rows):
        chunk = build_rows(schema, rows[i : i + batch_rows], pad_id, device)
        values = decode_rows(
            model,
            schema,
            prefix_cache,
            chunk,
            counters,
            extractive=extractive,
            attention=attention,
            lookahead=lookahead,
        )
        for own, docs, vals in zip(chunk.owner, chunk.document, values, strict=True):
            for (_, n), d, v in zip(own, docs, vals, strict=False):
                out[d][n] = v
    return out
