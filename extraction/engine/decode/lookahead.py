"""Lookahead for HPD steps: draft tokens verified in the same forward (prompt lookup, per slot).

A step feeds each open slot's last token. With lookahead it also feeds draft tokens after it, at
the next positions of the slot's gap; under block attention a query sees its slot's columns up to
its own position, so the drafts are causal among themselves. hpd.decode_step then reads the
outputs left to right: output i is chosen (greedy, under the slot's constraint) exactly as a step
of one token would choose it, and output i + 1 is read only while the chosen token equals draft
i + 1 (hpd.confirmed). This module only proposes the drafts; feeding and reading them is the
step's own work (hpd.py), the same with drafts or without. The values are therefore those of one token per step; a step yields 1 to 1 + drafts tokens
per slot. A rejected draft's cache column is left as it is: later queries of the slot see its
columns up to their own position only, and the next step overwrites it.

Drafts (propose):
    n/a    a value so far on "n/a" drafts the rest of it and the terminator (most absent
           attributes: their three steps become one)
    copy   a value is mostly a copy of its document: the document tokens after the value's last
           token (after its last two, where they occur together) are drafted, up to `most`

On a CPU a forward's time barely grows from 1 to 16 tokens (the weights are read either way, and
bfloat16 matrix products cost the same), while the last steps of a batch feed a handful of slots.
So copies are drafted only while a step is small: up to `budget` tokens in all. Dense rows
(dense_attention.py) keep every fed token visible to its slot, so they decode without lookahead.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Lookahead:
    """most: draft tokens per slot and step; budget: a step's tokens (open slots and their drafts)
    up to which document copies are drafted (0: "n/a" drafts only)."""

    most: int = 4
    budget: int = 48


def copies_per_slot(settings: Lookahead, n_open: int) -> int:
    """Copy drafts each open slot gets at a step with n_open slots: the budget shared evenly."""
    if n_open == 0:
        return 0
    return max(0, min(settings.most, (settings.budget - n_open) // n_open))


def propose(
    settings: Lookahead,
    values: torch.Tensor,
    fed: torch.Tensor,
    gap: torch.Tensor,
    docs: torch.Tensor,
    na: list[int],
    term: int,
) -> torch.Tensor:
    """Drafts for M open slots. values [M, G+1]: each slot's tokens so far (-1 after them), its
    last token at fed [M]; gap [M] its token budget; docs [M, Ld] its document's tokens (-1:
    padding) -> drafts [M, K] (-1: none; a slot's drafts come first in its row)."""
    M, device = len(fed), fed.device
    rows = torch.arange(M, device=device)
    last = values[rows, fed]
    K = max(settings.most, len(na))
    out = torch.full((M, K), -1, dtype=torch.long, device=device)
    ahead = torch.arange(K, device=device)
    # copy: the document after the value's last token, preferring where the token before it matches too
    k_copy = copies_per_slot(settings, M)
    if k_copy and docs.shape[1]:
        hit = docs == last[:, None]  # [M, Ld]
        before = torch.where(fed > 0, values[rows, (fed - 1).clamp(min=0)], -2)
        prev = torch.cat([torch.full((M, 1), -3, device=device, dtype=docs.dtype), docs[:, :-1]], 1)
        pair = hit & (prev == before[:, None])
        hit = torch.where(pair.any(1, keepdim=True), pair, hit)
        found = hit.any(1)
        at = (
            hit.to(torch.int8).argmax(1)[:, None] + 1 + ahead[:k_copy]
        )  # [M, k_copy] the tokens after the match
        copy = torch.where(at < docs.shape[1], docs[rows[:, None], at.clamp(max=docs.shape[1] - 1)], -1)
        out[:, :k_copy] = torch.where(found[:, None], copy, -1)
    # n/a: the rest of it and the terminator, for a value that is a proper prefix of it
    if na:
        tail = torch.tensor(na + [term], device=device)
        A = len(na)
        width = min(A, values.shape[1])
        so_far = (values[:, :width] == tail[:width]) | (torch.arange(width, device=device) > fed[:, None])
        on = so_far.all(1) & (fed + 1 < A)
        at = fed[:, None] + 1 + ahead  # [M, K]
        rest = torch.where(at <= A, tail[at.clamp(max=A)], -1)
        out = torch.where(on[:, None], rest, out)
    # a draft fed at index fed + i must fit the gap (fed + i < gap), and drafts stop at the first gap
    out = torch.where(ahead + 1 < (gap - fed)[:, None], out, -1)
    return torch.where((out >= 0).cumprod(1).bool(), out, -1)
