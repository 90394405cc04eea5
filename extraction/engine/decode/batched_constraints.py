"""Batched slot constraints: every slot of a batch under its rule, with tensor ops per step.

The per-slot states (SpanState and ChoiceState in extractive.py / constraints.py, which training
walks; NumberState and FreeState in tests/support/reference_constraints.py) are the readable spec;
walking them in Python for every slot at every step cost more than the step's forward on small
models. BatchedConstraint holds the same states for N slots at once:

    span    started [N] and ends [N, Lw]: the end offsets (in the document's bytes) of every
            occurrence of the value so far; allowed next = the tokens that continue the text at one
            of them (a CSR per document: offset -> tokens, TokenTable.continuing), or before the
            value started the document's first tokens (a CSR per document and start rule); a push
            compares the token's bytes with the document at every offset at once
    auto    a finite automaton (choice trie, number byte automaton): one integer state per slot and
            a CSR per rule: state -> (allowed token, next state), expanded once over the reachable
            states (few: a trie's nodes; the number rule's phases and unit prefixes)
    open    a free value: every token, ends anytime
    n/a     span and number slots also walk "n/a" (na_at, -1 once off it), as the per-slot states

Tables are built once per document / rule (cached on the DocIndex / rule) and concatenated once per
batch; a step only indexes them. The only Python per step loops over these kinds, never over slots.
"""

from __future__ import annotations

import torch

from extraction.engine.decode.constraints import LEAD, ChoiceRule, NumberRule, SpanRule
from extraction.engine.decode.extractive import DocIndex, TokenTable
from extraction.engine.layout import COMPOUND, FREE, WORD

SPAN, AUTO, OPEN = 0, 1, 2
STRIDE = 1 << 24  # automaton key = state * STRIDE + token (vocabularies stay under 16M tokens)
SENTINEL = 256  # a document's padding byte: never equal to a token's byte
LAST = torch.iinfo(torch.long).max  # the padding key after every automaton key


def _csr(groups: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Lists -> (ptr [len+1], flat values)."""
    sizes = torch.tensor([0] + [len(g) for g in groups], dtype=torch.long)
    flat = torch.tensor([v for g in groups for v in g], dtype=torch.long)
    return sizes.cumsum(0), flat


def _expand(ptr: torch.Tensor, values: torch.Tensor, keys: torch.Tensor, rows: torch.Tensor):
    """Every value of CSR rows `keys`, each tagged with its entry of `rows` -> (rows, values)."""
    starts = ptr[keys]
    counts = ptr[keys + 1] - starts
    firsts = torch.repeat_interleave(starts - (counts.cumsum(0) - counts), counts)
    at = torch.arange(len(firsts), device=ptr.device) + firsts
    return torch.repeat_interleave(rows, counts), values[at]


def piece_tables(table: TokenTable, device=None) -> tuple[torch.Tensor, ...]:
    """Every token's bytes and its bytes leading whitespace dropped, padded with -1 -> (pieces
    [V, P] int16, lengths [V], stripped [V, P], stripped lengths [V]); built once per table and
    device."""
    device = torch.device(device or "cpu")
    per_device = table.__dict__.setdefault("_batched_pieces", {})
    if device not in per_device and device.type != "cpu":
        per_device[device] = tuple(t.to(device) for t in piece_tables(table))
    cached = per_device.get(device)
    if cached is None:
        out = []
        for pieces in (table.pieces, table.stripped):
            raw = [p or b"" for p in pieces]
            lens = torch.tensor([len(p) for p in raw], dtype=torch.long)
            width = max(1, int(lens.max()) if len(lens) else 1)
            tab = torch.full((len(raw), width), -1, dtype=torch.int16)
            flat = b"".join(raw)
            if flat:
                rows = torch.repeat_interleave(torch.arange(len(raw)), lens)
                cols = torch.arange(len(flat)) - torch.repeat_interleave(lens.cumsum(0) - lens, lens)
                tab[rows, cols] = torch.frombuffer(bytearray(flat), dtype=torch.uint8).to(torch.int16)
            out += [tab, lens]
        width = max(out[0].shape[1], out[2].shape[1])  # one width for both
        out[0] = torch.nn.functional.pad(out[0], (0, width - out[0].shape[1]), value=-1)
        out[2] = torch.nn.functional.pad(out[2], (0, width - out[2].shape[1]), value=-1)
        cached = per_device[device] = tuple(out)
    return cached


def doc_tables(index: DocIndex) -> dict:
    """A document's tables (cached on it): its bytes, the tokens continuing it at every offset, where
    values may start / end under each rule, and the first tokens under each start rule."""
    cached = getattr(index, "_batched", None)
    if cached is None:
        data, n = index.data, len(index.data)
        cached = {
            "data": list(data),
            "continuing": [index.table.continuing(data, e) for e in range(n + 1)],
            "start": {r: [index.word_start(a, r) for a in range(n)] + [False] for r in (WORD, COMPOUND)},
            "end": {r: [index.word_end(a, r) for a in range(n + 1)] for r in (FREE, WORD, COMPOUND)},
            "first": {r: index.first_tokens(r) for r in (WORD, COMPOUND)},
        }
        index._batched = cached
    return cached


def automaton(rule) -> dict:
    """A choice or number rule as a finite automaton (cached on the rule): per state (0 = start) its
    allowed tokens (sorted), their next states, whether a value may end there, and the token that
    finishes a path from there (-1: none)."""
    cached = getattr(rule, "_automaton", None)
    if cached is not None:
        return cached
    if isinstance(rule, ChoiceRule):
        states, seen = [rule.root], {id(rule.root): 0}
        tokens, nexts, accept, finish = [], [], [], []
        for node in states:  # breadth first: states grows while walked
            toks = sorted(node.children)
            for t in toks:
                child = node.children[t]
                if id(child) not in seen:
                    seen[id(child)] = len(states)
                    states.append(child)
            tokens.append(toks)
            nexts.append([seen[id(node.children[t])] for t in toks])
            accept.append(node.value is not None)
            finish.append(min(toks) if node.value is None and toks else -1)
    else:
        states, seen = [(LEAD, b"")], {(LEAD, b""): 0}
        tokens, nexts, accept, finish = [], [], [], []
        for st in states:
            toks = rule.tokens(st)
            nxt = [rule.walk(st, rule.table.pieces[t]) for t in toks]
            for s in nxt:
                if s not in seen:
                    seen[s] = len(states)
                    states.append(s)
            tokens.append(list(toks))
            nexts.append([seen[s] for s in nxt])
            accept.append(rule.accepting(st))
            finish.append(-1)
    cached = {"tokens": tokens, "next": nexts, "accept": accept, "finish": finish}
    rule._automaton = cached
    return cached


class BatchedConstraint:
    """N slots, slot i = (rule or None, its document's DocIndex or None, its end token). mask(idx)
    / may_end(idx) / finishing(idx) / push(idx, tokens) take slot indices, so callers may drop or
    reorder rows freely. Semantics are those of the per-slot states, exactly (tests compare)."""

    def __init__(self, slots: list[tuple[object, DocIndex | None, int]], device=None):
        self.device = torch.device(device or "cpu")
        N = len(slots)
        kinds = []
        for rule, index, _ in slots:
            if rule is None:
                kinds.append(OPEN)
            elif isinstance(rule, SpanRule):
                if index is None:
                    raise ValueError(
                        "extractive decoding needs RowDoc.span (extractive.doc_index of the text)"
                    )
                kinds.append(SPAN)
            elif isinstance(rule, (ChoiceRule, NumberRule)):
                kinds.append(AUTO)
            else:
                raise TypeError(f"no batched form of {type(rule).__name__}")
        self.kind = torch.tensor(kinds, dtype=torch.long).reshape(N)
        self.end = torch.tensor([int(e) for _, _, e in slots], dtype=torch.long).reshape(N)
        self.length = torch.zeros(N, dtype=torch.long)
        na = [list(getattr(rule, "na", None) or []) for rule, _, _ in slots]  # a choice: inside its trie
        width = max([1] + [len(a) for a in na])
        self.na_tab = torch.tensor([a + [-1] * (width - len(a)) for a in na], dtype=torch.long).reshape(
            N, width
        )
        self.na_len = torch.tensor([len(a) for a in na], dtype=torch.long).reshape(N)
        self.na_at = torch.where(self.na_len > 0, 0, -1)
        self._build_spans(slots, kinds)
        self._build_automata(slots, kinds)
        for name, value in list(vars(self).items()):
            if isinstance(value, torch.Tensor):
                setattr(self, name, value.to(self.device))

    def _build_spans(self, slots, kinds) -> None:
        docs, row_of = [], {}
        for (_, index, _), k in zip(slots, kinds, strict=True):
            if k == SPAN and id(index) not in row_of:
                row_of[id(index)] = len(docs)
                docs.append(doc_tables(index))
        self.Lw = Lw = 1 + max([len(d["data"]) for d in docs], default=0)
        table = next((index.table for (_, index, _), k in zip(slots, kinds, strict=True) if k == SPAN), None)
        self.pieces = piece_tables(table, self.device) if table is not None else None
        width = Lw + (self.pieces[0].shape[1] if self.pieces else 1)
        self.data = torch.tensor(
            [d["data"] + [SENTINEL] * (width - len(d["data"])) for d in docs] or [[SENTINEL] * width],
            dtype=torch.int16,
        )
        cont = [d["continuing"][e] if e < len(d["continuing"]) else [] for d in docs for e in range(Lw)]
        self.cont_ptr, self.cont_tok = _csr(cont)
        firsts, first_row, starts, ends, doc = [], [], [], [], []
        first_of: dict[tuple[int, int], int] = {}
        for (rule, index, _), k in zip(slots, kinds, strict=True):
            if k != SPAN:
                first_row.append(0)
                starts.append([False] * Lw)
                ends.append([False] * Lw)
                doc.append(0)
                continue
            d = docs[row_of[id(index)]]
            key = (row_of[id(index)], rule.start_rule)
            if key not in first_of:
                first_of[key] = len(firsts)
                firsts.append(d["first"][rule.start_rule])
            first_row.append(first_of[key])
            pad = Lw - len(d["data"]) - 1
            starts.append(d["start"][rule.start_rule] + [False] * pad)
            ends.append(d["end"][rule.end_rule] + [False] * pad)
            doc.append(row_of[id(index)])
        self.first_ptr, self.first_tok = _csr(firsts or [[]])
        self.first_row = torch.tensor(first_row, dtype=torch.long)
        self.word_start = torch.tensor(starts, dtype=torch.bool).reshape(len(slots), Lw)
        self.word_end = torch.tensor(ends, dtype=torch.bool).reshape(len(slots), Lw)
        self.doc = torch.tensor(doc, dtype=torch.long)
        self.started = torch.zeros(len(slots), dtype=torch.bool)
        self.ends = torch.zeros((len(slots), Lw), dtype=torch.bool)

    def _build_automata(self, slots, kinds) -> None:
        offset, start, tokens, nexts, accept, finish = {}, [], [], [], [], []
        for (rule, _, _), k in zip(slots, kinds, strict=True):
            if k == AUTO and id(rule) not in offset:
                a = automaton(rule)
                offset[id(rule)] = base = len(accept)
                tokens += a["tokens"]
                nexts += [[base + s for s in nx] for nx in a["next"]]
                accept += a["accept"]
                finish += a["finish"]
            start.append(offset[id(rule)] if k == AUTO else -1)
        self.auto = torch.tensor(start, dtype=torch.long)
        self.auto_ptr, self.auto_tok = _csr(tokens or [[]])
        keys = [s * STRIDE + t for s, toks in enumerate(tokens) for t in toks]
        self.auto_keys = torch.tensor(keys + [LAST], dtype=torch.long)  # sorted: states, then tokens
        self.auto_next = torch.tensor([s for nx in nexts for s in nx] + [-1], dtype=torch.long)
        self.accept = torch.tensor(accept + [False], dtype=torch.bool)
        self.finish = torch.tensor(finish + [-1], dtype=torch.long)

    # ------------------------------------------------------------------------------ queries

    def _na_next(self, idx: torch.Tensor) -> torch.Tensor:
        """The next token along "n/a" of each slot (-1: not on it, or complete)."""
        at = self.na_at[idx]
        on = (at >= 0) & (at < self.na_len[idx])
        return torch.where(on, self.na_tab[idx, at.clamp(min=0, max=self.na_tab.shape[1] - 1)], -1)

    def may_end(self, idx: torch.Tensor) -> torch.Tensor:
        """[M] bool: the end token may come next (a free value: always)."""
        na_done = (self.na_len[idx] > 0) & (self.na_at[idx] == self.na_len[idx])
        span_end = self.started[idx] & (self.ends[idx] & self.word_end[idx]).any(1)
        state = self.auto[idx]
        auto_end = (state >= 0) & self.accept[state.clamp(min=0)]
        return na_done | span_end | auto_end | (self.kind[idx] == OPEN)

    def finishing(self, idx: torch.Tensor) -> torch.Tensor:
        """[M] the token a value must take next when its gap is full (rest of "n/a", some
        completion of a choice), -1: none."""
        state = self.auto[idx]
        auto = torch.where(state >= 0, self.finish[state.clamp(min=0)], -1)
        na = self._na_next(idx)
        return torch.where(na >= 0, na, auto)

    def allowed(self, idx: torch.Tensor, vocab: int, strict_end: bool = False):
        """-> (rows [K], tokens [K], free [M] bool): the tokens allowed next for slots idx as
        distinct (row of idx, token) pairs, sorted (a row's tokens ascending): the end token where
        the value may end, only the end token where nothing else is. Free slots (every token
        allowed) are flagged, their pairs meaningless. strict_end: the end token is also a text
        token (AR without the terminator), allowed only where the value may end. The pairs are a
        few per slot where a mask row is the whole vocabulary: a step's choice gathers only them
        (token_masks.masked_choice)."""
        kind = self.kind[idx]
        span = kind == SPAN
        fresh = (span & ~self.started[idx]).nonzero().squeeze(1)
        going = (span & self.started[idx]).nonzero().squeeze(1)
        pair, at = self.ends[idx[going]].nonzero(as_tuple=True)
        alive = ((kind == AUTO) & (self.auto[idx] >= 0)).nonzero().squeeze(1)
        na = self._na_next(idx)
        on = (na >= 0).nonzero().squeeze(1)
        found = [
            _expand(self.first_ptr, self.first_tok, self.first_row[idx[fresh]], fresh),
            _expand(self.cont_ptr, self.cont_tok, self.doc[idx[going[pair]]] * self.Lw + at, going[pair]),
            _expand(self.auto_ptr, self.auto_tok, self.auto[idx[alive]], alive),
            (on, na[on]),
        ]
        rows, toks = (torch.cat(x) for x in zip(*found, strict=True))
        M, end = len(idx), self.end[idx]
        at_end = toks == end[rows]
        # the end token: where the value may end, where the text allows it (unless strict), and
        # where nothing else is allowed (never empty)
        end_ok = self.may_end(idx)
        if not strict_end:
            end_ok |= torch.zeros(M, dtype=torch.bool, device=self.device).index_fill_(0, rows[at_end], True)
        rows, toks = rows[~at_end], toks[~at_end]
        end_ok |= torch.bincount(rows, minlength=M) == 0
        ended = end_ok.nonzero().squeeze(1)
        key = torch.unique(torch.cat([rows, ended]) * vocab + torch.cat([toks, end[ended]]))
        return key // vocab, key % vocab, kind == OPEN

    def mask(self, idx: torch.Tensor, vocab: int, strict_end: bool = False):
        """-> (mask [M, vocab] bool, free [M] bool): allowed(idx) as a mask (free slots all True)."""
        rows, toks, free = self.allowed(idx, vocab, strict_end)
        out = torch.zeros((len(idx), vocab), dtype=torch.bool, device=self.device)
        out[rows, toks] = True
        out[free] = True
        return out, free

    def forced(self, idx: torch.Tensor, vocab: int) -> torch.Tensor:
        """[M] the one token each slot allows next (-1: several, or a free slot)."""
        rows, toks, free = self.allowed(idx, vocab)
        one = ((torch.bincount(rows, minlength=len(idx)) == 1) & ~free)[rows]
        return torch.full((len(idx),), -1, dtype=torch.long, device=self.device).index_put_(
            (rows[one],), toks[one]
        )

    STATE = ("length", "na_at", "auto", "started", "ends")  # what push changes, per slot

    def save(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """The state of slots idx, for restore (a walk that may be taken back)."""
        return {name: getattr(self, name)[idx].clone() for name in self.STATE}

    def restore(self, idx: torch.Tensor, saved: dict[str, torch.Tensor], keep: torch.Tensor) -> None:
        """Slots idx[keep] back to their saved state (save(idx))."""
        for name in self.STATE:
            getattr(self, name)[idx[keep]] = saved[name][keep]

    # ------------------------------------------------------------------------------ push

    def push(self, idx: torch.Tensor, tokens: torch.Tensor) -> None:
        """Slots idx (distinct) emitted tokens; an end token ends its slot and is not pushed."""
        keep = tokens != self.end[idx]
        idx, tokens = idx[keep], tokens[keep]
        self.length[idx] += 1
        at, na_len = self.na_at[idx], self.na_len[idx]
        ok = (at < na_len) & (self._na_next(idx) == tokens)
        self.na_at[idx] = torch.where(at >= 0, torch.where(ok, at + 1, -1), at)
        kind, state = self.kind[idx], self.auto[idx]
        alive = (kind == AUTO) & (state >= 0)
        key = state.clamp(min=0) * STRIDE + tokens
        pos = torch.searchsorted(self.auto_keys, key).clamp(max=len(self.auto_keys) - 1)
        nxt = torch.where(self.auto_keys[pos] == key, self.auto_next[pos], -1)
        self.auto[idx] = torch.where(alive, nxt, state)
        span = kind == SPAN
        self._push_spans(idx[span], tokens[span])

    def _push_spans(self, idx: torch.Tensor, tokens: torch.Tensor) -> None:
        """Before a value started, a token whose bytes without leading whitespace occur at a value
        start starts it there; after, the occurrences its bytes continue go on, shifted by them."""
        if len(idx) == 0:
            return
        pieces, lens, stripped, slens = self.pieces
        known = (tokens >= 0) & (tokens < len(lens))
        tok = tokens.clamp(min=0, max=len(lens) - 1)
        started = self.started[idx]
        piece = torch.where(started[:, None], pieces[tok], stripped[tok])
        n = torch.where(known, torch.where(started, lens[tok], slens[tok]), 0)
        P = max(1, int(n.max()))
        windows = self.data[self.doc[idx]].unfold(1, P, 1)[:, : self.Lw]  # [M, Lw, P]
        beyond = torch.arange(P, device=self.device)[None] >= n[:, None]  # [M, P]
        match = ((windows == piece[:, None, :P]) | beyond[:, None]).all(-1)
        match &= torch.where(started[:, None], self.ends[idx], self.word_start[idx])
        src = torch.arange(self.Lw, device=self.device)[None] - n[:, None]
        shifted = (src >= 0) & match.gather(1, src.clamp(min=0))
        moved = started | (n > 0)  # a whitespace-only first token leaves the value unstarted
        self.ends[idx] = torch.where(moved[:, None], shifted, self.ends[idx])
        self.started[idx] = moved
