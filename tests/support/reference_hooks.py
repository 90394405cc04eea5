"""The per-slot decoding hooks as they were before batched_constraints.py: HPD's Constrained over
one constraints.py state per slot, and AR-JSON's ExtractiveProcessor over one state per row, each
walked in Python at every step. Kept verbatim as the reference the batched hooks must equal
(tests/engine/test_constraints_batched.py swaps them in)."""

from __future__ import annotations

import torch
from transformers import LogitsProcessor

from extraction.engine.decode import constraints
from extraction.engine.decode import extractive as span
from extraction.engine.decode.ar import scaffold
from extraction.engine.decode.hpd import Greedy, Rows
from extraction.engine.decode.token_masks import allowed_mask, masked_choice
from extraction.engine.layout import SchemaPrompt
from extraction.engine.modeling import logits
from tests.support.engine_reference import allowed_pairs
from tests.support.reference_constraints import start


class ReferenceConstrained(Greedy):
    """Every slot under its attribute's constraint (constraints.slot_rules: by default a substring of
    its document, RowDoc.span, or "n/a"): disallowed tokens get -inf before the argmax, and a value's
    confidence comes from the log-softmax renormalized over the allowed tokens
    (token_masks.masked_choice, over the per-slot sets' pairs), from the whole output layer's
    logits (the engine computes only the allowed tokens' ones)."""

    def __init__(self, rows: Rows, schema: SchemaPrompt):
        self.term = schema.terminator
        self.states = slot_states(rows, schema)  # [B][S] constraint state or None

    def choose(self, model, hidden, rows, slots):
        scores = logits(model, hidden)
        picked = [self.states[b][s] for b, s in zip(rows.tolist(), slots.tolist(), strict=True)]
        allowed = [st.allowed() if st else None for st in picked]
        tok, tok_lp = masked_choice(scores, *allowed_pairs(allowed, scores.shape[-1]))
        for st, t in zip(picked, tok.tolist(), strict=True):
            if st is not None and t != self.term:
                st.push(t)
        return tok, tok_lp


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
            states.append(start(rule, index, schema.terminator) if ok else None)
        states += [None] * (len(valid[b]) - len(states))
        out.append(states)
    return out


class ReferenceProcessor(LogitsProcessor):
    """ar.ExtractiveProcessor as it was before the batched constraint: one constraint state per
    row, walked in Python (the format and rules are those of ar.ExtractiveProcessor's docstring);
    the reference test_constraints_batched.py compares the batched processor with."""

    def __init__(self, schema: SchemaPrompt, spans: list[span.DocIndex | None], prompt_len: int):
        self.parts, self.ends = scaffold(schema)
        self.na = list(schema.na_ids)
        self.rules = constraints.slot_rules(schema)
        self.gaps = list(schema.gaps)
        self.end_is_text = not schema.value_end_in_ar  # the end token may also be a document token
        self.index = list(spans)
        self.prompt_len = prompt_len
        B = len(spans)
        self.part = [0] * B  # scaffold part being written, or the value after it (state not None)
        self.at = [0] * B  # tokens of that part written
        self.state: list[object | None] = [None] * B
        self.done = [False] * B
        self.truncated = [[False] * len(self.ends) for _ in range(B)]
        self.seen = 0  # generated tokens already pushed
        for b in range(B):
            self._settle(b)

    def _settle(self, b: int) -> None:
        """Past the end of a scaffold part: into the value after it, or done after the close."""
        n = self.part[b]
        if self.at[b] < len(self.parts[n]):
            return
        if n < len(self.ends):
            rule = self.rules[n]
            end = self.ends[n]
            self.state[b] = start(rule, self.index[b], end)
        else:
            self.done[b] = True

    def push(self, b: int, tok: int) -> None:
        """Row b generated tok."""
        if self.done[b]:
            return
        st = self.state[b]
        if st is None:  # a scaffold token (forced)
            self.at[b] += 1
        elif tok != st.end:
            st.push(tok)
            return
        else:  # the value ended: on to the next part
            self.state[b], self.part[b], self.at[b] = None, self.part[b] + 1, 0
        self._settle(b)

    def _value_allowed(self, st) -> list[int] | None:
        """state.allowed() as a list (None: free), without an end token that is only a document
        token here."""
        allowed = st.allowed()
        if allowed is None:
            return None
        if isinstance(allowed, torch.Tensor):
            allowed = allowed.tolist()
        if self.end_is_text and st.end in allowed and not st.may_end():
            allowed = [t for t in allowed if t != st.end] or [st.end]  # a '"' of the text, not an end
        return allowed

    def allowed(self, b: int, scores: torch.Tensor) -> list[int] | None:
        """Row b's allowed next tokens (None: finished, unconstrained)."""
        if self.done[b]:
            return None
        st, n = self.state[b], self.part[b]
        if st is None:
            return [self.parts[n][self.at[b]]]
        if st.length < self.gaps[n]:
            return self._value_allowed(st)  # None (a free value): every token
        finish = st.finishing()
        if finish is not None:
            return [finish]  # finish "n/a"
        free = self._value_allowed(st)  # the gap is full: would the model have ended here?
        best = int(scores[b].argmax()) if free is None else free[int(scores[b, free].argmax())]
        self.truncated[b][n] = best != st.end
        return [st.end]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        new = input_ids[:, self.prompt_len + self.seen :].tolist()  # [B, tokens since the last call]
        self.seen = input_ids.shape[1] - self.prompt_len
        for b, toks in enumerate(new):
            for t in toks:
                self.push(b, int(t))
        allowed = [self.allowed(b, scores) for b in range(len(new))]
        if all(a is None for a in allowed):
            return scores
        mask = allowed_mask(allowed, scores.shape[-1], scores.device)
        return scores.masked_fill(~mask, float("-inf"))
