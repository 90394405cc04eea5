"""Allowed-token choice: the one place a slot constraint's allowed ids shape a token's choice.

HPD's step and AR-JSON's processor choose from the allowed (row, token) pairs
(batched_constraints.BatchedConstraint.allowed) with masked_choice: the greedy token and its
log-softmax over the allowed tokens, computed from the pairs' logits alone. allowed_mask turns
per-row allowed sets (a list of ids or a LongTensor; None leaves a row unconstrained) into a mask
over the vocabulary: training's extractive loss reads it (row_packing). The dense masked
log-softmax masked_choice equals is the tests' reference (tests/support/reference_constraints.py)."""

from __future__ import annotations

import torch


def allowed_mask(allowed: list, vocab: int, device=None) -> torch.Tensor:
    """One allowed set per row (list / LongTensor of ids; None: unconstrained) -> bool mask
    [rows, vocab], True = allowed."""
    mask = torch.zeros((len(allowed), vocab), dtype=torch.bool, device=device)
    free = [r for r, a in enumerate(allowed) if a is None]
    if free:
        mask[free] = True
    r_list = [r for r, a in enumerate(allowed) if isinstance(a, list) for _ in a]
    t_list = [t for a in allowed if isinstance(a, list) for t in a]
    rows, ids = [], []
    if r_list:
        rows.append(torch.tensor(r_list, dtype=torch.long))
        ids.append(torch.tensor(t_list, dtype=torch.long))
    tensors = [(r, a) for r, a in enumerate(allowed) if isinstance(a, torch.Tensor)]
    if tensors:
        sizes = torch.tensor([len(a) for _, a in tensors])
        rows.append(torch.repeat_interleave(torch.tensor([r for r, _ in tensors]), sizes))
        ids.append(torch.cat([a for _, a in tensors]))
    if rows:
        mask[torch.cat(rows).to(mask.device), torch.cat(ids).to(mask.device)] = True
    return mask


def masked_choice(
    logits: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor, free: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [M, V] float32; the allowed tokens as (row, token) pairs, distinct, each row's tokens
    ascending; free [M] rows allow every token -> (token [M], its log-probability [M]): the
    greedy token among the allowed ones (the lowest id on a tie, as argmax) and its log-softmax
    over them, as the greedy token of the log-softmax over the allowed tokens gives. Only the pairs' logits are read:
    a masked log-softmax over the whole vocabulary cost a tenth of an HPD step."""
    return pair_choice(logits[rows, tokens], rows, tokens, free, lambda f: logits[f], logits.shape[1])


def pair_choice(x, rows, tokens, free, free_logits, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """masked_choice from the pairs' logits x [K] alone (modeling.pair_logits computes no others);
    free_logits(f) gives the whole rows [len(f), V] of the free rows f."""
    M = len(free)
    top = torch.full((M,), float("-inf"), device=x.device).scatter_reduce(0, rows, x, "amax")
    total = torch.zeros(M, device=x.device).index_add_(0, rows, torch.exp(x - top[rows]))
    best = x == top[rows]
    tok = torch.full((M,), vocab, device=x.device).scatter_reduce(0, rows[best], tokens[best], "amin")
    lp = -torch.log(total)  # the best token's logit minus the log-sum-exp of the allowed ones
    f = free.nonzero().squeeze(1)
    if len(f):
        tok[f], lp[f] = greedy_log_softmax(free_logits(f))
    return tok, lp


def greedy_log_softmax(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unconstrained: the argmax token and its log-softmax."""
    best, tok = torch.log_softmax(logits, dim=-1).max(dim=-1)
    return tok, best
