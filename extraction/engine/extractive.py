"""Opt-in extractive constraint: every value spells a token span of its document, or "n/a".

At each step of a value, the allowed next tokens are
  (a) the tokens that continue an occurrence of the value-so-far inside the document's token ids,
  (b) the end token (the terminator) when the value-so-far is non-empty and matches a span,
  (c) the tokens of "n/a" (its first token at the start, then its continuation, then the end token).
Spans are token-level: the value's ids are a contiguous subsequence of the document's ids. With the
bundled tokenizer (spaces, punctuation and digits are isolated tokens) that is exactly a
word-aligned substring of the text; with other tokenizers it is still well defined.

Per document, DocIndex maps each token id to its positions once; a SpanState (one per value being
decoded) keeps the end positions of the occurrences of its value-so-far, so a step only walks those.
"""

from __future__ import annotations

import torch


class DocIndex:
    """A document's token ids and, per token id, the positions where it occurs."""

    def __init__(self, doc: list[int]):
        self.doc = [int(t) for t in doc]
        self.where: dict[int, list[int]] = {}
        for i, t in enumerate(self.doc):
            self.where.setdefault(t, []).append(i)
        self.first = sorted(self.where)  # tokens that may start a span


class SpanState:
    """The value-so-far of one slot: occurrences in the document and progress along "n/a"."""

    def __init__(self, index: DocIndex, na: list[int], end: int):
        self.index, self.na, self.end = index, list(na), int(end)
        self.length = 0
        self.ends: list[int] = []  # for each occurrence of the value-so-far: the position after it
        self.na_at = 0 if self.na else -1  # "n/a" tokens matched so far; -1: off the n/a path

    def allowed(self) -> list[int]:
        """Token ids allowed next (sorted); never empty."""
        if self.length == 0:
            out = set(self.index.first)
            if self.na:
                out.add(self.na[0])
            return sorted(out) if out else [self.end]
        doc = self.index.doc
        out = {doc[e] for e in self.ends if e < len(doc)}
        if self.ends:  # the value-so-far is a complete token span
            out.add(self.end)
        if self.na_at >= 0:
            out.add(self.na[self.na_at] if self.na_at < len(self.na) else self.end)
        return sorted(out) if out else [self.end]

    def push(self, tok: int) -> None:
        """The slot emitted tok (not the end token)."""
        tok = int(tok)
        if self.length == 0:
            self.ends = [p + 1 for p in self.index.where.get(tok, [])]
        else:
            doc = self.index.doc
            self.ends = [e + 1 for e in self.ends if e < len(doc) and doc[e] == tok]
        if self.na_at >= 0:
            ok = self.na_at < len(self.na) and self.na[self.na_at] == tok
            self.na_at = self.na_at + 1 if ok else -1
        self.length += 1


def allowed_tokens(doc: list[int], value: list[int], na: list[int], end: int) -> list[int]:
    """Allowed next tokens after value (the ids emitted so far) for a document (pure; for tests
    and one-off use: decoders keep a SpanState per slot instead)."""
    state = SpanState(DocIndex(doc), na, end)
    for t in value:
        state.push(t)
    return state.allowed()


def allowed_mask(allowed: list[list[int] | None], vocab: int, device=None) -> torch.Tensor:
    """One allowed list per row (None: unconstrained) -> bool mask [rows, vocab], True = allowed."""
    mask = torch.zeros((len(allowed), vocab), dtype=torch.bool, device=device)
    rows = [r for r, a in enumerate(allowed) if a is None]
    if rows:
        mask[rows] = True
    r_idx = [r for r, a in enumerate(allowed) if a is not None for _ in a]
    t_idx = [t for a in allowed if a is not None for t in a]
    if r_idx:
        mask[r_idx, t_idx] = True
    return mask


def constrain(lp: torch.Tensor, allowed: list[list[int] | None]) -> torch.Tensor:
    """lp [..., V] log-probabilities (unconstrained log-softmax); allowed: one entry per row of
    lp.reshape(-1, V). Disallowed tokens get -inf and the allowed ones are renormalized, so the
    confidence of a constrained value is its probability under the model restricted to the
    allowed tokens (not the unconstrained probability). Rows with None are returned unchanged."""
    V = lp.shape[-1]
    flat = lp.reshape(-1, V)
    mask = allowed_mask(allowed, V, lp.device)
    out = torch.log_softmax(flat.masked_fill(~mask, float("-inf")), dim=-1)
    free = torch.tensor([a is None for a in allowed], dtype=torch.bool, device=lp.device)
    out = torch.where(free[:, None], flat, out)
    return out.reshape(lp.shape)
