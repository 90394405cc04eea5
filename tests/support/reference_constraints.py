"""Per-value constraint states and the dense masked log-softmax that only the tests run.

The decoders constrain every slot of a batch at once (batched_constraints.BatchedConstraint) and
choose from the allowed (row, token) pairs' logits alone (token_masks.masked_choice). Training
walks the span and choice states of constraints.py / extractive.py (row_packing), so those stay in
the engine. What is left here is the plain, one-value-at-a-time form of the rest, the reference
the batched code is tested equal to: a free value's state, a number's state (walking
constraints.NumberRule's automaton), `start` for any rule, and the masked log-softmax over the
whole vocabulary.
"""

from __future__ import annotations

import torch

from extraction.engine.decode.constraints import LEAD, NumberRule
from extraction.engine.decode.token_masks import allowed_mask


class FreeState:
    """A free value (AR-JSON only; HPD leaves such a slot unconstrained): any token, end anytime."""

    def __init__(self, end: int):
        self.end, self.length = int(end), 0

    def allowed(self):
        return None

    def may_end(self) -> bool:
        return True

    def finishing(self) -> int | None:
        return None

    def push(self, tok: int) -> None:
        self.length += 1


class NumberState:
    """One number being decoded under a NumberRule: the automaton's state and how far along "n/a"
    it is (-1: off the n/a path)."""

    def __init__(self, rule: NumberRule, end: int):
        self.rule, self.end, self.length = rule, int(end), 0
        self.state: tuple | None = (LEAD, b"")
        self.na_at = 0 if rule.na else -1

    def allowed(self) -> torch.Tensor:
        rule = self.rule
        ids = set(rule.tokens(self.state)) if self.state is not None else set()
        if rule.accepting(self.state) or (rule.na and self.na_at == len(rule.na)):
            ids.add(self.end)
        if 0 <= self.na_at < len(rule.na):
            ids.add(rule.na[self.na_at])
        return torch.tensor(sorted(ids) or [self.end], dtype=torch.long)

    def may_end(self) -> bool:
        return self.rule.accepting(self.state) or (bool(self.rule.na) and self.na_at == len(self.rule.na))

    def finishing(self) -> int | None:
        return self.rule.na[self.na_at] if 0 <= self.na_at < len(self.rule.na) else None

    def push(self, tok: int) -> None:
        tok = int(tok)
        pieces = self.rule.table.pieces
        piece = pieces[tok] if 0 <= tok < len(pieces) else None
        self.state = self.rule.walk(self.state, piece) if piece else None
        if self.na_at >= 0:
            ok = self.na_at < len(self.rule.na) and self.rule.na[self.na_at] == tok
            self.na_at = self.na_at + 1 if ok else -1
        self.length += 1


def start(rule, index, end: int):
    """The state of one value under rule (None: a free value) on a document (extractive.DocIndex,
    needed by spans), ending with token `end`."""
    if rule is None:
        return FreeState(end)
    if isinstance(rule, NumberRule):
        return NumberState(rule, end)
    return rule.start(index, end)


def masked_log_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """logits [rows, V] (or log-probabilities: the same result), mask [rows, V] bool -> the
    log-softmax over the allowed tokens, -inf elsewhere (what masked_choice computes from the
    allowed pairs alone)."""
    return torch.log_softmax(logits.masked_fill(~mask, float("-inf")), dim=-1)


def constrain(lp: torch.Tensor, allowed: list) -> torch.Tensor:
    """lp [..., V] log-probabilities (unconstrained log-softmax); allowed: one entry per row of
    lp.reshape(-1, V) (token_masks.allowed_mask's sets; None leaves a row unchanged). Disallowed
    tokens get -inf and the allowed ones are renormalized, so the confidence of a constrained value
    is its probability under the model restricted to the allowed tokens."""
    V = lp.shape[-1]
    mask = allowed_mask(allowed, V, lp.device)
    free = torch.tensor([a is None for a in allowed], dtype=torch.bool, device=lp.device)
    flat = lp.reshape(-1, V)
    return torch.where(free[:, None], flat, masked_log_softmax(flat, mask)).reshape(lp.shape)
