"""AR-JSON at its honest best (HPD.md, "Baselines a fair benchmark runs"): the outputs of
ar.generate_json with a prefix cache, token for token, given every speed-up that applies to AR as
well as to HPD, so that HPD's ratio over it is HPD's parallelism and nothing else.

    the prefix       the shared instruction prefilled once per schema (hpd.prefill_prefix), each
                     batch's rows starting from it (ar.prefix_rows), as ar.generate_json with one
    the cache        preallocated per batch (modeling.AppendLayer via ar.prefix_rows): a step
                     writes its keys and values in place and attention reads the filled part.
                     static=True takes transformers' StaticCache instead (the same values with
                     transformers 5.24 on the CPU; tested): it preallocates too, but attention
                     reads all max_cache_len entries at every step, masked, and its rows cannot
                     leave the batch; evaluate's ar-honest-static puts it beside ar-honest, so
                     which is faster on a host is measured, not assumed
    the loop         its own, not generate's: one forward of the base model per token
                     (modeling: the same 2D padding mask and positions generate derives), no
                     [rows, vocabulary] score tensor per step, and rows that wrote their eos
                     leave the batch once half of it has (as HPD's finished rows leave it)
    the head         only where the constraint needs it, as HPD's Constrained: a token the format
                     forces (keys, punctuation, eos, the rest of "n/a" at a full gap) takes no
                     output layer at all (its log-probability over one allowed token is 0), a
                     constrained value the rows of its allowed tokens (modeling.pair_logits,
                     token_masks.pair_choice), the whole head only for a free value or free output
    the batch        the caller's; evaluate sweeps it (decoder_runs.SWEEPS)

The constraint is ar.ExtractiveProcessor's own state (scaffold, batched_constraints over HPD's slot
rules), fed the chosen tokens; the outputs are read by ar.read_outputs. Greedy only."""

from __future__ import annotations

import torch
from transformers import StaticCache

from extraction.engine.decode import extractive as span
from extraction.engine.decode.ar import (
    AROutput,
    ExtractiveProcessor,
    max_new_tokens,
    prefix_rows,
    prompts,
    read_outputs,
)
from extraction.engine.decode.hpd import prefill_prefix
from extraction.engine.decode.token_masks import greedy_log_softmax, pair_choice
from extraction.engine.layout import SchemaPrompt
from extraction.engine.modeling import logits, pair_logits, vocab_size


def pick(model, hidden: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor, free: torch.Tensor):
    """hidden [M, D]; allowed (row, token) pairs [K]; free [M] -> (token, log-probability) [M]:
    the output layer on the pairs' tokens only, the whole layer for the free rows."""
    x = pair_logits(model, hidden, rows, tokens)
    return pair_choice(x, rows, tokens, free, lambda f: logits(model, hidden[f]), vocab_size(model))


def choose(model, proc: ExtractiveProcessor | None, hidden: torch.Tensor, live: torch.Tensor):
    """The next token of the batch rows live [M] (ascending; their last hidden states [M, D]) ->
    (tokens, log-probabilities) [M]. Without a constraint: greedy over the whole head."""
    if proc is None:
        return greedy_log_softmax(logits(model, hidden))
    at = lambda r: torch.searchsorted(live, r)  # noqa: E731  batch rows -> their place in live
    judge = lambda r, pr, pt, f: pick(model, hidden[at(r)], pr, pt, f)[0]  # noqa: E731
    rows, toks, every = proc.allowed(vocab_size(model), judge)  # over every batch row
    B = len(every)
    count = torch.bincount(rows, minlength=B)
    forced = ~every & (count == 1)  # one allowed token: taken without the head, log-probability 0
    tok = torch.zeros(B, dtype=torch.long, device=hidden.device)
    lp = torch.zeros(B, device=hidden.device)
    one = forced[rows]
    tok[rows[one]] = toks[one]
    scored = live[~forced[live]]  # constrained values with a choice, and free values
    if len(scored):
        keep = torch.isin(rows, scored)
        tok[scored], lp[scored] = pick(
            model, hidden[at(scored)], torch.searchsorted(scored, rows[keep]), toks[keep], every[scored]
        )
    return tok[live], lp[live]


def static_rows(model, prefix_cache, rows: int, capacity: int) -> StaticCache:
    """transformers' StaticCache for a batch of rows, each starting with the prefix entries."""
    cache = StaticCache(config=model.config, max_cache_len=capacity)
    for i, layer in enumerate(prefix_cache.layers):
        keys, values = (t.expand(rows, -1, -1, -1).contiguous() for t in (layer.keys, layer.values))
        cache.update(keys, values, i)
    return cache


def drop_finished(cache, held: torch.Tensor, finished: torch.Tensor) -> torch.Tensor | None:
    """Once half the rows the cache holds have finished, let them go from it (every later forward
    computes fewer rows) -> the held rows to keep (indices into held), None: keep them all (also
    in a StaticCache, whose layers cannot drop rows)."""
    going = ~finished[held]
    if int(going.sum()) > len(held) // 2 or isinstance(cache, StaticCache):
        return None
    keep = going.nonzero().squeeze(1)
    for layer in cache.layers:
        layer.select_rows(keep)
    return keep


@torch.no_grad()
def decode_batch(
    model, schema: SchemaPrompt, docs, pad_id: int, prefix_cache, proc, budget: int, static: bool = False
):
    """One batch of documents -> (generated ids [B, T], their log-probabilities [B, T], forwards)."""
    device = next(model.parameters()).device
    ids, mask = prompts(schema, docs, pad_id, device, after_prefix=True)  # [B, P + L]
    B, P = ids.shape[0], len(schema.prefix_ids)
    rows_of = static_rows if static else lambda _model, *args: prefix_rows(*args)
    cache = rows_of(model, prefix_cache, B, ids.shape[1] + budget)
    # positions as generate derives them from the mask: each document starts at P, as in HPD
    pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
    x_ids, x_pos, x_mask = ids[:, P:], pos[:, P:], mask  # the prefix is in the cache already
    out_tok = torch.full((B, budget), pad_id, dtype=torch.long, device=device)
    out_lp = torch.zeros((B, budget), device=device)
    held = torch.arange(B, device=device)  # the batch rows the cache holds, ascending
    finished = torch.zeros(B, dtype=torch.bool, device=device)
    if proc is not None:
        proc.build(device)
    steps = 0
    for t in range(budget):
        hidden = model.base_model(
            input_ids=x_ids, position_ids=x_pos, attention_mask=x_mask, cache=cache, use_cache=True
        ).last_hidden_state[:, -1]  # [B', D]
        steps += 1
        going = ~finished[held]
        live = held[going]
        tok, lp = choose(model, proc, hidden[going], live)
        out_tok[live, t], out_lp[live, t] = tok, lp
        if proc is not None:
            pushed = torch.full((B,), pad_id, dtype=torch.long, device=device)
            pushed[live] = tok
            proc.push(pushed)
        finished[live] |= tok == schema.ar_eos
        if bool(finished.all()):
            break
        fed = torch.full((len(held),), pad_id, dtype=torch.long, device=device)  # finished rows: pad
        fed[going] = tok
        keep = drop_finished(cache, held, finished)
        if keep is not None:
            held, fed, x_pos, x_mask = held[keep], fed[keep], x_pos[keep], x_mask[keep]
        x_ids, x_pos = fed[:, None], x_pos[:, -1:] + 1
        x_mask = torch.cat([x_mask, x_mask.new_ones((len(held), 1))], 1)
    return out_tok[:, :steps], out_lp[:, :steps], steps


@torch.no_grad()
def generate_json(
    model,
    tokenizer,
    schema: SchemaPrompt,
    docs: list[list[int]],
    batch: int,
    spans: list[span.DocIndex | None] | None = None,
    prefix_cache=None,
    static: bool = False,
) -> tuple[list[AROutput], int]:
    """Greedy AR-JSON for every document, batch at a time -> (outputs, forward passes): what
    ar.generate_json writes with the same arguments (spans: constrained, as there; None: free
    output parsed from its text), at the cost of AR at its honest best. prefix_cache None: the
    prefix is prefilled here (one forward). static: transformers' StaticCache per batch."""
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else schema.ar_eos
    forwards = 0
    if prefix_cache is None:
        prefix_cache = prefill_prefix(model, schema.prefix_ids, device)
        forwards += 1
    budget = max_new_tokens(schema, spans is not None)
    outs: list[AROutput] = []
    for i in range(0, len(docs), batch):
        chunk = docs[i : i + batch]
        proc = None
        if spans is not None:
            proc = ExtractiveProcessor(schema, spans[i : i + batch], 0)
        new, lp, steps = decode_batch(model, schema, chunk, pad_id, prefix_cache, proc, budget, static)
        forwards += steps
        outs += read_outputs(tokenizer, schema, new.cpu(), lp.cpu(), proc)
    return outs, forwards
