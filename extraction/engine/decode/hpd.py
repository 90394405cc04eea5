"""Hyper-parallel decoding: one prefill, then one forward step per value token (or several, with
lookahead) for every open slot of every stacked document of every batch row.

    prefill_prefix   shared instruction prefix, once per schema -> cache [1, H, P, D]
    build_rows       per row: J documents (layout.build_hpd_layout: doc + keys with gaps), padded
    prefill_rows     docs of all rows in one forward; logits at each key's last token = token 1 of every value
    decode_step      one forward for the open slots (OpenSlots: this step's view of them): each feeds its
                     last token and its lookahead drafts (step_tokens; lookahead.propose), packed per row
                     (pack_queries) -> next token(s), read while the drafts are confirmed (confirmed)
    settle_forced    after the prefill and each step: a slot whose remaining tokens its constraint forces
                     to the end is closed without feeding them (nothing but the slot itself sees them)
    decode_rows      prefill, then steps until every slot finished; finished rows leave the attention
    collect          tokens -> SlotValue (ids, logprobs, truncated)

Index spaces, each named where it is used: the decode state (Decoding) is [B, S], by batch row and
slot, from prefill to collect; a step works on its open slots k = 0..M-1 (OpenSlots maps k to its
batch row and slot, and to the attention's row, which differs once finished rows left); its
queries are packed into the attention's [B', Q] grid in one function (pack_queries).

The slot constraint is a hook (Greedy, or Constrained over batched_constraints.py): it turns a step's
last hidden states into the chosen tokens, so prefill and steps pick tokens through one function.
Only queries of open slots reach the model's head and the hook: the padding a row needs to be
rectangular is never projected onto the vocabulary (and under block attention never enters the
model at all), and a constrained slot is projected onto its allowed tokens only.

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
from extraction.engine.decode.batched_constraints import BatchedConstraint
from extraction.engine.decode.block_attention import BlockRows, NotDispatched
from extraction.engine.decode.dense_attention import DenseRows
from extraction.engine.decode.lookahead import Lookahead, propose
from extraction.engine.decode.token_masks import greedy_log_softmax, pair_choice
from extraction.engine.layout import PAD, SchemaPrompt, build_hpd_layout
from extraction.engine.modeling import cut_window, forward_hidden, logits, new_cache, pair_logits, vocab_size


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
    settled: int = 0  # value tokens the constraint forced to a slot's end, written without a forward
    max_steps_per_row_batch: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------------- rows


@torch.no_grad()
def prefill_prefix(model, prefix_ids: list[int], device) -> torch.Tensor:
    """Run the shared prefix once -> its cache (a DynamicCache with batch 1)."""
    cache = new_cache()
    ids = torch.tensor([prefix_ids], device=device)  # [1, P]
    pos = torch.arange(len(prefix_ids), device=device)[None]  # [1, P]
    mask = masks.causal_mask(1, len(prefix_ids), len(prefix_ids), model.dtype, device)
    forward_hidden(model, ids, pos, masks.per_layer(mask, pos, pos, cut_window(model.config)), cache)
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

    slots: BatchedConstraint | None = None  # the slots' constraint states, where a hook keeps them batched

    def choose(self, model, hidden, rows, slots):
        """hidden [N, D] last hidden states of N queries, query i for slot slots[i] of batch row
        rows[i] -> (tokens, their log-probabilities) [N]."""
        return greedy_log_softmax(logits(model, hidden))


class Constrained(Greedy):
    """Every slot under its attribute's constraint (constraints.slot_rules: by default a substring of
    its document, RowDoc.span, or "n/a"): disallowed tokens get -inf before the argmax, and a value's
    confidence comes from the log-softmax over the allowed tokens (token_masks.pair_choice): only
    the allowed tokens' logits are computed (modeling.pair_logits), the whole output layer only
    for free slots.
    The slots' states live in one batched_constraints.BatchedConstraint (slot b * S + s: tensor ops
    per step, no Python per slot), indexed by batch row, so rows that drop_finished removed change
    nothing here."""

    def __init__(self, rows: Rows, schema: SchemaPrompt):
        self.width = rows.slot_valid.shape[1]
        self.slots = BatchedConstraint(slot_specs(rows, schema), rows.input_ids.device)

    def choose(self, model, hidden, rows, slots):
        idx = rows * self.width + slots
        vocab = vocab_size(model)
        pair_rows, pair_tokens, free = self.slots.allowed(idx, vocab)
        x = pair_logits(model, hidden, pair_rows, pair_tokens)
        tok, tok_lp = pair_choice(x, pair_rows, pair_tokens, free, lambda f: logits(model, hidden[f]), vocab)
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


# ---------------------------------------------------------------------------------- prefill


@dataclass
class Decoding:
    """One batch of rows while its slots decode. Every per-slot tensor is [B, S], indexed by (batch
    row, slot) as in Rows, for the whole decode; only the attention lets the rows whose slots have
    all finished go (drop_finished), and `attended` says which batch rows it still holds."""

    rows: Rows
    attn: BlockRows | DenseRows  # the rows' attention entries (and masks)
    attended: torch.Tensor  # [B'] ascending: the attention's row i is batch row attended[i]
    is_open: torch.Tensor  # [B, S] slots still decoding
    last: torch.Tensor  # [B, S] each slot's last token
    fed: torch.Tensor  # [B, S] value tokens fed back so far (the last one's token number)
    out_tok: torch.Tensor  # [B, S, G+1] chosen tokens (-1 = none)
    out_lp: torch.Tensor  # [B, S, G+1] their log-probabilities
    steps: int = 0
    lookahead: Lookahead | None = None  # drafts per step (block attention only), None: one token


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
) -> Decoding:
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
    row, slot = rows.slot_valid.nonzero(as_tuple=True)  # every real slot
    tok, lp = hook.choose(model, hidden[row, rows.slot_index[row, slot]], row, slot)
    out_tok = torch.full((B, S, max_gap + 1), -1, dtype=torch.long, device=device)
    out_lp = torch.zeros((B, S, max_gap + 1), dtype=torch.float32, device=device)
    out_tok[row, slot, 0], out_lp[row, slot, 0] = tok, lp
    # padding slots (never open) get token 0: dense rows still embed their padding queries
    first = out_tok[:, :, 0].clamp(min=0)
    return Decoding(
        rows=rows,
        attn=attn,
        attended=torch.arange(B, device=device),
        is_open=rows.slot_valid & (first != schema.terminator) & (rows.slot_gap > 0),
        last=first,
        fed=torch.zeros((B, S), dtype=torch.long, device=device),
        out_tok=out_tok,
        out_lp=out_lp,
        lookahead=lookahead if isinstance(attn, BlockRows) else None,
    )


# ---------------------------------------------------------------------------------- one step


@dataclass
class OpenSlots:
    """A step's view of the slots still decoding, row-major: open slot k is slot `slot[k]` of batch
    row `row[k]`, whose entries are the attention's row `attn_row[k]`. Every tensor is [M]."""

    row: torch.Tensor
    slot: torch.Tensor
    attn_row: torch.Tensor

    @classmethod
    def of(cls, d: Decoding) -> OpenSlots:
        row, slot = d.is_open.nonzero(as_tuple=True)
        return cls(row, slot, torch.searchsorted(d.attended, row))  # attended is ascending

    def at(self, state: torch.Tensor) -> torch.Tensor:
        """Each open slot's entry of a [B, S, ...] tensor -> [M, ...]."""
        return state[self.row, self.slot]


def step_tokens(d: Decoding, open_: OpenSlots, schema: SchemaPrompt) -> tuple[torch.Tensor, torch.Tensor]:
    """What each open slot feeds this step: its last token, then its lookahead drafts (none without
    lookahead), then -1 (past the drafts no output is confirmed) -> (tokens [M, 2 + K], queries
    per slot [M])."""
    last = open_.at(d.last)[:, None]  # [M, 1]
    if d.lookahead is None:
        drafts = last.new_empty((len(last), 0))
    else:
        docs = d.rows.doc_tokens[open_.row, open_.at(d.rows.slot_doc)]  # [M, Ld]
        drafts = propose(
            d.lookahead,
            open_.at(d.out_tok),
            open_.at(d.fed),
            open_.at(d.rows.slot_gap),
            docs,
            schema.na_ids,
            schema.terminator,
        )
    none = torch.full_like(last, -1)
    return torch.cat([last, drafts, none], 1), 1 + (drafts >= 0).sum(1)


def pack_queries(d: Decoding, open_: OpenSlots, tokens: torch.Tensor, n: torch.Tensor):
    """The step's queries as the attention paths take them: open slot k feeds tokens[k, :n[k]] as
    its value tokens number fed, fed + 1, ... (at positions from its slot's start), each attention
    row's queries first, slot by slot -> (ids, positions, slots, valid, token numbers) [B', Q]."""
    # one entry per query: its open slot k, its place i among that slot's tokens
    k, i = (torch.arange(tokens.shape[1], device=n.device) < n[:, None]).nonzero(as_tuple=True)
    number = open_.at(d.fed)[k] + i
    row = open_.attn_row[k]  # queries come row-major already: number them within their row
    per_row = torch.bincount(row, minlength=len(d.attended))
    place = torch.arange(len(row), device=row.device) - (per_row.cumsum(0) - per_row)[row]
    # the [B', Q] grid the attention takes, padding invalid
    shape = (len(d.attended), max(int(per_row.max()), 1))
    ids, pos, slots, numbers = (torch.zeros(shape, dtype=torch.long, device=row.device) for _ in range(4))
    valid = torch.zeros(shape, dtype=torch.bool, device=row.device)
    ids[row, place], pos[row, place] = tokens[k, i], open_.at(d.rows.slot_start)[k] + number
    slots[row, place], numbers[row, place], valid[row, place] = open_.slot[k], number, True
    return ids, pos, slots, valid, numbers


def confirmed(tok, draft, term: int, number, gap) -> torch.Tensor:
    """Whether a slot's next output is read: the draft fed after the token just chosen is that token,
    the value goes on, and the token (number `number`) leaves room in the gap."""
    return (tok == draft) & (tok != term) & (number < gap)


def decode_step(model, d: Decoding, hook: Greedy, schema: SchemaPrompt, counters: Counters) -> None:
    """One forward for every open slot: its last token in (and its lookahead drafts after it), its
    next token(s) out. Output i of a slot is chosen as a one-token step would choose it, and read
    only while every draft before it was confirmed (lookahead.py)."""
    open_ = OpenSlots.of(d)
    tokens, n = step_tokens(d, open_, schema)  # [M, 2 + K], [M]
    hidden = d.attn.step(model, *pack_queries(d, open_, tokens, n))  # [sum n, D] row-major
    counters.forward_steps += 1
    counters.drafted += int(n.sum()) - len(n)
    d.steps += 1
    first = n.cumsum(0) - n  # open slot k's first query in hidden
    reading = torch.ones_like(n, dtype=torch.bool)  # open slots whose next output is read
    for i in range(int(n.max())):
        k = (reading & (i < n)).nonzero().squeeze(1)  # open slots whose output i is read
        if len(k) == 0:
            break
        row, slot = open_.row[k], open_.slot[k]
        tok, lp = hook.choose(model, hidden[first[k] + i], row, slot)
        number = d.fed[row, slot] + 1  # the value token chosen: its number
        d.out_tok[row, slot, number], d.out_lp[row, slot, number] = tok, lp
        d.fed[row, slot], d.last[row, slot] = number, tok
        counters.tokens_decoded += len(k)
        counters.accepted += len(k) if i else 0
        reading[k] = confirmed(tok, tokens[k, i + 1], schema.terminator, number, d.rows.slot_gap[row, slot])
    d.is_open = d.is_open & (d.last != schema.terminator) & (d.fed < d.rows.slot_gap)


def settle_forced(model, d: Decoding, hook: Greedy, schema: SchemaPrompt, counters: Counters) -> None:
    """Close every open slot whose remaining tokens its constraint forces, one allowed token after
    another up to the terminator or a full gap (the rest of "n/a", of an enumeration's only value
    left): they are written without a forward. A slot's value tokens are seen by that slot alone,
    so tokens after which it ends need no entries; greedy under the constraint picks the one allowed
    token, at log-probability 0 (token_masks.pair_choice over one token), so the values and their
    confidences are those of feeding them one by one. A slot whose walk meets a choice is taken
    back to where it was, and decodes on."""
    if hook.slots is None:
        return
    row, slot = d.is_open.nonzero(as_tuple=True)
    if len(row) == 0:
        return
    idx = row * hook.width + slot
    saved = hook.slots.save(idx)
    number, gap = d.fed[row, slot].clone(), d.rows.slot_gap[row, slot]
    walked = torch.full_like(d.out_tok[row, slot], -1)  # [M, G+1] forced tokens by token number
    ended = torch.zeros_like(row, dtype=torch.bool)
    going = torch.arange(len(row), device=row.device)  # slots whose walk is forced so far
    vocab = vocab_size(model)
    while len(going):
        tok = hook.slots.forced(idx[going], vocab)
        going, tok = going[tok >= 0], tok[tok >= 0]
        number[going] += 1
        walked[going, number[going]] = tok
        end = (tok == schema.terminator) | (number[going] == gap[going])
        ended[going[end]] = True
        going, tok = going[~end], tok[~end]
        hook.slots.push(idx[going], tok)
    hook.slots.restore(idx, saved, ~ended)
    e = ended.nonzero().squeeze(1)
    if len(e) == 0:
        return
    r, s = row[e], slot[e]
    k, col = (walked[e] >= 0).nonzero(as_tuple=True)
    d.out_tok[r[k], s[k], col], d.out_lp[r[k], s[k], col] = walked[e][k, col], 0.0
    d.fed[r, s], d.last[r, s] = number[e], walked[e, number[e]]
    d.is_open[r, s] = False
    counters.tokens_decoded += len(k)
    counters.settled += len(k)


# ---------------------------------------------------------------------------------- the loop


def drop_finished(d: Decoding, counters: Counters) -> None:
    """Once half the rows the attention holds have finished, let the finished ones go from it
    (fewer rows in every later forward)."""
    going_on = d.is_open[d.attended].any(1)  # [B'] per attention row
    if int(going_on.sum()) > len(d.attended) // 2:
        return
    keep = going_on.nonzero().squeeze(1)  # [B''] attention rows
    counters.rows_dropped += len(d.attended) - len(keep)
    d.attn.select_rows(keep)
    d.attended = d.attended[keep]


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
    settle_forced(model, d, hook, schema, counters)
    tick(clock, device)
    while (max_steps is None or d.steps < max_steps) and bool(d.is_open.any()):
        drop_finished(d, counters)
        decode_step(model, d, hook, schema, counters)
        settle_forced(model, d, hook, schema, counters)
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
