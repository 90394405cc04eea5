"""Allowed-token masks: the one place a slot constraint's allowed ids become -inf logits.

HPD's step chooses from the allowed (row, token) pairs (batched_constraints.BatchedConstraint.allowed)
with masked_choice: the greedy token and its log-softmax over the allowed tokens, computed from the
pairs' logits alone. allowed_mask / constrain take per-row allowed sets (the per-slot states of
constraints.py: tests, one-off use); an allowed set is a list of ids or a LongTensor, None leaves
a row unconstrained. masked_log_softmax is the dense form of the same log-softmax.
"""

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


def constrain(lp: torch.Tensor, allowed: list) -> torch.Tensor:
    """lp [..., V] log-probabilities (unconstrained log-softmax); allowed: one entry per row of
    lp.reshape(-1, V). Disallowed tokens get -inf and the allowed ones are renormalized, so the
    confidence of a constrained value is its probability under the model restricted to the
    allowed tokens (not the unconstrained probability). Rows with None are returned unchanged."""
    V = lp.shape[-1]
    mask = allowed_mask(allowed, V, lp.device)
    free = torch.tensor([a is None for a in allowed], dtype=torch.bool, device=lp.device)
    return constrain_masked(lp, mask, free)


def constrain_masked(lp: torch.Tensor, mask: torch.Tensor, free: torch.Tensor) -> torch.Tensor:
    """constrain with the mask already built (mask [rows, V] bool, free [rows] bool: unchanged
    rows), e.g. by batched_constraints.BatchedConstraint.mask."""
    V = lp.shape[-1]
    flat = lp.reshape(-1, V)
    out = torch.where(free[:, None], flat, masked_log_softmax(flat, mask))
    return out.reshape(lp.shape)


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logits [rows, V] (or log-probabilities: the same result), mask [rows, V] bool -> the
    log-softmax over the allowed tokens, -inf elsewhere. The decoders' step takes it straight from
    the logits: one log-softmax over the vocabulary per query, not one before and one after."""
    return torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)


def masked_choice(
    logits: torch.Tensor, rows: torch.Tensor, tokens: torch.Tensor, free: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [M, V] float32; the allowed tokens as (row, token) pairs, distinct, each row's tokens
    ascending; free [M] rows allow every token -> (token [M], its log-probability [M]): the
    greedy token among the allowed ones (the lowest id on a tie, as argmax) and its log-softmax
    over them, as greedy(masked_log_softmax(logits, mask)) gives. Only the pairs' logits are read:
    a masked log-softmax over the whole vocabulary cost a tenth of an HPD step."""
    M = logits.shape[0]
    x = logits[rows, tokens]
    top = torch.full((M,), float("-inf"), device=logits.device).scatter_reduce(0, rows, x, "amax")
    total = torch.zeros(M, device=logits.device).index_add_(0, rows, torch.exp(x - top[rows]))
    best = x == top[rows]
    tok = torch.full((M,), logits.shape[1], device=logits.device).scatter_reduce(
        0, rows[best], tokens[best], "amin"
    )
    lp = -torch.log(total)  # the best token's logit minus the log-sum-exp of the allowed ones
    f = free.nonzero().squeeze(1)
    if len(f):
        tok[f], lp[f] = greedy_log_softmax(logits[f])
    return tok, lp


def greedy_log_softmax(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unconstrained: the argmax token and its log-softmax."""
    best, tok = torch.log_softmax(logits, dim=-1).max(dim=-1)
    return tok, best
