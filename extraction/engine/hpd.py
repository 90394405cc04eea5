"""Hyper-parallel decoding: one prefill, then one forward step per value token for every open slot
of every stacked document of every batch row.

    prefill_prefix   shared instruction prefix, once per schema -> cache [1, H, P, D]
    build_rows       per row: J documents (doc + keys with gaps), flattened, right-padded
    prefill_rows     docs of all rows in one forward; logits at each key's last token = token 1 of every value
    decode           per step: the open slots (compacted per row) -> next token; finished slots leave
    collect          tokens -> SlotValue (ids, logprobs, truncated)

Cache: append-only. Memory order != position order: the step's tokens are appended at the end of
the cache but carry positions inside their slot's gap. Beside the cache travel kv_pos / kv_doc
(prompt entries) and gen_slot (generated entries), from which masks.py derives the mask.

The fork baseline runs through the same code: one row per (document, attribute), holding the
document, keys 0..n, and a single slot n.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from . import constraints, masks
from . import extractive as span
from .layout import PAD, PROMPT_DOC, SchemaPrompt, doc_layout
from .modeling import expand_cache, forward_hidden, greedy, logprobs, new_cache
from .token_masks import constrain


@dataclass
class DecodeSettings:
    """How HPD lays out a batch. stack = J documents per row, rows = batch rows per forward."""

    stack: int = 1
    rows: int = 16


@dataclass
class SlotValue:
    ids: list[int]  # value tokens, terminator excluded
    logprobs: list[float]  # one per generated token (terminator included when emitted)
    steps: int  # forward passes that produced a token for this slot
    truncated: bool  # filled its gap without a terminator


@dataclass
class RowDoc:
    """One document inside a row: its token ids, how many keys to lay out, which slots to decode."""

    doc: list[int]
    n_keys: int
    slots: list[int]
    span: span.DocIndex | None = None  # the product text (extractive decoding), else None


@dataclass
class Counters:
    forward_steps: int = 0
    tokens_decoded: int = 0
    prefill_tokens: int = 0
    rows_dropped: int = 0  # rows that left the decode early (all their slots finished)
    max_steps_per_row_batch: list[int] = field(default_factory=list)


# ---------------------------------------------------------------------------------- prefill


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


def build_rows(schema: SchemaPrompt, rows: list[list[RowDoc]], pad_id: int, device) -> Rows:
    seqs, poss, docs, idx, start, gap, sdoc, owner, spans = [], [], [], [], [], [], [], [], []
    for row in rows:
        spans.append([rd.span for rd in row for _ in rd.slots])
        s_ids, s_pos, s_doc, r_idx, r_start, r_gap, r_doc, r_own = [], [], [], [], [], [], [], []
        for j, rd in enumerate(row):
            sub = replace(
                schema, attributes=schema.attributes[: rd.n_keys], key_ids=schema.key_ids[: rd.n_keys]
            )
            part = doc_layout(sub, rd.doc)
            off = len(s_ids)
            s_ids += part.input_ids
            s_pos += part.position_ids
            s_doc += [j] * len(part.input_ids)
            for n in rd.slots:
                r_idx.append(off + part.key_end[n])
                r_start.append(part.slot_start[n])
                r_gap.append(schema.attributes[n].max_tokens)
                r_doc.append(j)
                r_own.append((j, n))
        seqs.append(s_ids), poss.append(s_pos), docs.append(s_doc)
        idx.append(r_idx), start.append(r_start), gap.append(r_gap), sdoc.append(r_doc), owner.append(r_own)
    L = max(len(s) for s in seqs)
    S = max(len(r) for r in idx)

    def pad(rows_, width, value):
        return torch.tensor([r + [value] * (width - len(r)) for r in rows_], device=device)

    return Rows(
        input_ids=pad(seqs, L, pad_id),
        position_ids=pad(poss, L, 0),
        doc_ids=pad(docs, L, PAD),
        slot_index=pad(idx, S, 0),
        slot_start=pad(start, S, 0),
        slot_gap=pad(gap, S, 0),
        slot_doc=pad(sdoc, S, PAD),
        slot_valid=pad([[True] * len(r) for r in idx], S, False),
        owner=owner,
        span=spans,
    )


# ---------------------------------------------------------------------------------- decode


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
) -> list[list[SlotValue]]:
    """Prefill the rows after the shared prefix, then decode every slot greedily. -> [B][S] values.
    max_steps stops early and clock collects a timestamp after each forward (layout cost probes).
    extractive: decode every slot under its attribute's constraint (constraints.slot_rules: the
    schema's rules, by default a substring of its document (RowDoc.span) or "n/a")."""
    device, dtype = rows.input_ids.device, model.dtype
    B, L = rows.input_ids.shape
    S = rows.slot_index.shape[1]
    P = len(schema.prefix_ids)
    term = schema.terminator

    # metadata of the prompt entries: prefix then the rows' own tokens
    pre_pos = torch.arange(P, device=device)[None].expand(B, P)
    kv_pos = torch.cat([pre_pos, rows.position_ids], 1)  # [B, P+L]
    kv_doc = torch.cat([torch.full((B, P), PROMPT_DOC, device=device), rows.doc_ids], 1)  # [B, P+L]

    max_gap = int(rows.slot_gap.max())
    cache = expand_cache(prefix_cache, B, capacity=P + L + S * max_gap)  # every step appends <= S entries
    mask = masks.prefill_mask(rows.position_ids, rows.doc_ids, kv_pos, kv_doc, dtype)  # [B, 1, L, P+L]
    hidden = forward_hidden(model, rows.input_ids, rows.position_ids, mask, cache)  # [B, L, D]
    counters.forward_steps += 1
    counters.prefill_tokens += B * L
    at_keys = torch.gather(
        hidden, 1, rows.slot_index[:, :, None].expand(-1, -1, hidden.shape[-1])
    )  # [B, S, D]
    # constrained: disallowed tokens get -inf before the argmax; a value's confidence then comes from
    # the model's log-softmax renormalized over the allowed tokens (token_masks.constrain)
    states = slot_states(rows, schema) if extractive else None  # [B][S] constraint state or None
    lp_keys = logprobs(model, at_keys)  # [B, S, V]
    if states is not None:
        lp_keys = constrain(lp_keys, [st.allowed() if st else None for r in states for st in r])
    tok, lp = greedy(lp_keys)  # [B, S]
    tick(clock, device)
    if states is not None:
        for r, toks in zip(states, tok.tolist(), strict=True):
            for st, t in zip(r, toks, strict=True):
                if st is not None and t != term:
                    st.push(t)

    # the prompt part of every slot's mask row, built once; generated entries extend it per step
    slot_pos = rows.slot_start - 1  # [B, S] position of the key's last token
    base = masks.slot_prompt_mask(slot_pos, rows.slot_doc, kv_pos, kv_doc, dtype)  # [B, S, P+L]
    gen_slot = torch.empty((B, 0), dtype=torch.long, device=device)  # [B, G]

    out_tok = torch.full((B, S, max_gap + 1), -1, dtype=torch.long, device=device)
    out_lp = torch.zeros((B, S, max_gap + 1), dtype=torch.float32, device=device)
    out_tok[:, :, 0], out_lp[:, :, 0] = tok, lp
    fed = torch.zeros((B, S), dtype=torch.long, device=device)  # value tokens fed back so far
    open_ = rows.slot_valid & (tok != term) & (rows.slot_gap > 0)  # [B, S]
    last, start, gap = tok, rows.slot_start, rows.slot_gap
    row_map = torch.arange(B, device=device)  # active row -> row of the batch
    counters.tokens_decoded += int(rows.slot_valid.sum())
    steps = 0
    while True:
        n_open = open_.sum(1)  # [B']
        q = int(n_open.max())
        if q == 0 or (max_steps is not None and steps >= max_steps):
            break
        n_active = int((n_open > 0).sum())
        if n_active <= len(row_map) // 2:  # finished rows leave: drop them from cache and state
            keep = (n_open > 0).nonzero().squeeze(1)  # [B'']
            counters.rows_dropped += len(row_map) - len(keep)
            for layer in cache.layers:
                layer.select_rows(keep)
            base, gen_slot, open_, last, fed = base[keep], gen_slot[keep], open_[keep], last[keep], fed[keep]
            start, gap, row_map = start[keep], gap[keep], row_map[keep]
        # compact: open slots first in each row, padding queries after them
        order = torch.sort((~open_).to(torch.int8), dim=1, stable=True).indices[:, :q]  # [B', Q]
        valid = torch.gather(open_, 1, order)  # [B', Q]
        ids = torch.gather(last, 1, order)  # [B', Q]
        pos = torch.gather(start + fed, 1, order)  # [B', Q]
        gen_slot = torch.cat([gen_slot, torch.where(valid, order, PAD)], 1)  # [B', G+Q]
        mask = masks.step_mask(base, gen_slot, order, valid)  # [B', 1, Q, P+L+G+Q]
        hidden = forward_hidden(model, ids, pos, mask, cache)  # [B', Q, D]
        counters.forward_steps += 1
        steps += 1
        lp_step = logprobs(model, hidden)  # [B', Q, V]
        if states is not None:  # open slots only; padding queries stay unconstrained
            rmap, qs, ok = row_map.tolist(), order.tolist(), valid.tolist()
            picked = [
                [states[rmap[b]][s] if ok[b][k] else None for k, s in enumerate(qs[b])]
                for b in range(len(qs))
            ]
            lp_step = constrain(lp_step, [st.allowed() if st else None for r in picked for st in r])
        new_tok, new_lp = greedy(lp_step)  # [B', Q]
        tick(clock, device)
        if states is not None:
            for r, toks in zip(picked, new_tok.tolist(), strict=True):
                for st, t in zip(r, toks, strict=True):
                    if st is not None and t != term:
                        st.push(t)
        counters.tokens_decoded += int(valid.sum())

        hit = torch.zeros_like(open_).scatter_(1, order, valid)  # [B', S] slots that got a token
        full_tok = torch.zeros_like(last).scatter_(1, order, new_tok)
        full_lp = torch.zeros(hit.shape, dtype=new_lp.dtype, device=device).scatter_(1, order, new_lp)
        fed = fed + hit.long()
        out_tok[row_map, :, steps] = torch.where(hit, full_tok, out_tok[row_map, :, steps])
        out_lp[row_map, :, steps] = torch.where(hit, full_lp, out_lp[row_map, :, steps])
        last = torch.where(hit, full_tok, last)
        open_ = open_ & (last != term) & (fed < gap)
    counters.max_steps_per_row_batch.append(steps)
    return collect(out_tok.tolist(), out_lp.tolist(), rows.slot_valid.tolist(), term)


def slot_states(rows: Rows, schema: SchemaPrompt) -> list[list[object | None]]:
    """The constraint state of every valid slot (constraints.py: its attribute's rule started on
    the slot's document); None for padding slots and free values."""
    rules = constraints.slot_rules(schema)
    valid = rows.slot_valid.tolist()
    out = []
    for b, row in enumerate(rows.span):
        states: list[object | None] = []
        for s, index in enumerate(row):
            rule = rules[rows.owner[b][s][1]]  # the slot's attribute
            ok = valid[b][s] and rule is not None
            states.append(rule.start(index, schema.terminator) if ok else None)
        states += [None] * (len(valid[b]) - len(states))
        out.append(states)
    return out


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
    docs_ = [RowDoc(d, n_attr, all_slots, sp) for d, sp in zip(docs, spans_, strict=True)]
    return [docs_[i : i + stack] for i in range(0, len(docs_), stack)]


def fork_rows(
    docs: list[list[int]], n_attr: int, spans: list[span.DocIndex] | None = None
) -> list[list[RowDoc]]:
    """One row per (document, attribute): the document, keys 0..n, slot n (the fork baseline)."""
    spans_ = spans if spans is not None else [None] * len(docs)
    return [[RowDoc(d, n + 1, [n], sp)] for d, sp in zip(docs, spans_, strict=True) for n in range(n_attr)]


def decode(
    model,
    schema: SchemaPrompt,
    prefix_cache,
    rows: list[list[RowDoc]],
    batch_rows: int,
    pad_id: int,
    counters: Counters,
    extractive: bool = False,
) -> list[dict[tuple[int, int], SlotValue]]:
    """Decode rows batch_rows at a time -> per row {(row-doc index, attribute): value}."""
    device = next(model.parameters()).device
    out: list[dict[tuple[int, int], SlotValue]] = []
    for i in range(0, len(rows), batch_rows):
        chunk = build_rows(schema, rows[i : i + batch_rows], pad_id, device)
        values = decode_rows(model, schema, prefix_cache, chunk, counters, extractive=extractive)
        for own, vals in zip(chunk.owner, values, strict=True):
            out.append({o: v for o, v in zip(own, vals, strict=False)})
    return out
