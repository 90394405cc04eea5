"""AR-JSON baseline as the paper runs it (HF generate, batched over products, KV cache on) and prompt
lookup decoding (HF prompt_lookup_num_tokens, batch 1). Same prompt wording as HPD
(layout.build_ar_prompt). ar_honest.py writes the same outputs at AR's honest best, reusing the
constraint (ExtractiveProcessor) and the readers here."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from extraction.engine.decode import constraints
from extraction.engine.decode import extractive as span
from extraction.engine.decode.batched_constraints import BatchedConstraint
from extraction.engine.decode.token_masks import masked_choice
from extraction.engine.layout import (
    NA,
    SchemaPrompt,
    _quote,
    ar_max_new_tokens,
    build_ar_prompt,
    parse_ar_json,
)
from extraction.engine.modeling import expand_cache


@dataclass
class ARValue:
    text: str | None  # None: the key never appeared in the output
    confidence: float
    steps: int  # tokens generated up to the end of this value
    truncated: bool = False  # extractive: the gap (max_tokens) ended it, the model would have gone on


@dataclass
class AROutput:
    text: str
    values: dict[str, ARValue]
    tokens: int  # generated tokens (padding excluded)


class ForwardCounter:
    """Counts forward passes of a model (generate hides them) via a forward hook."""

    def __init__(self, model):
        self.count = 0
        self._handle = model.register_forward_hook(self._hook)

    def _hook(self, *_):
        self.count += 1

    def close(self):
        self._handle.remove()


class ChosenLogprobs(LogitsProcessor):
    """The log-probability of the token greedy decoding picks at every generated position (the
    argmax of the scores as the processors before this one, the last, leave them), kept as one
    number per row and position. generate's own output_scores / output_logits would keep a
    [rows, vocabulary] tensor per step to read that one number from: with Gemma 3's 262,144-row
    vocabulary 1 MB per row and step, some 20 GB for 64 rows of 150 steps, enough to kill a worker.
    Keyed by position, so the candidate positions of prompt lookup, scored again after a rejection,
    keep the scores of the tokens accepted there."""

    def __init__(self, prompt_len: int):
        self.prompt_len = prompt_len
        self.at: dict[int, torch.Tensor] = {}  # generated position -> [B] log-probability

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        s = scores.float()
        self.at[input_ids.shape[1] - self.prompt_len] = s.max(-1).values - s.logsumexp(-1)
        return scores

    def table(self, rows: int, steps: int) -> torch.Tensor:
        """[rows, steps] log-probabilities (0 where a position was never scored)."""
        out = torch.zeros(rows, steps)
        for t, lp in self.at.items():
            if t < steps:
                out[:, t] = lp.cpu()
        return out


def scaffold(schema: SchemaPrompt) -> tuple[list[list[int]], list[int]]:
    """The fixed part of layout.ar_target -> (parts, ends): the output is parts[0] value_0 ends[0]
    parts[1] value_1 ends[1] .. parts[N] (parts[N]: '"}' and eos). With the terminator in AR
    (schema.value_end_in_ar) every value ends with it and parts[n] is key n; without it value n ends
    with the first token of the next key (or of '"}'), which then is not repeated in parts[n + 1]."""
    keys, close = [list(k) for k in schema.key_ids], [*schema.end_ids, schema.ar_eos]
    if schema.value_end_in_ar:
        return [*keys, close], [schema.terminator] * len(keys)
    return [keys[0]] + [k[1:] for k in keys[1:]] + [close[1:]], [k[0] for k in keys[1:]] + [close[0]]


def value_spans(schema: SchemaPrompt, gen: list[int]) -> list[tuple[int, int] | None]:
    """Where each value lies in generated ids that follow the scaffold: (first, end) with gen[end]
    its end token (len(gen) when the output stops inside it); None from the first part that
    does not follow the scaffold (never, under ExtractiveProcessor)."""
    parts, ends = scaffold(schema)
    out: list[tuple[int, int] | None] = []
    i = 0
    for part, end in zip(parts, ends, strict=False):  # parts has one more entry: the close
        if gen[i : i + len(part)] != part:
            break
        i += len(part)
        j = gen.index(end, i) if end in gen[i:] else len(gen)
        out.append((i, j))
        i = j + 1
    return out + [None] * (len(ends) - len(out))


def value_budget(schema: SchemaPrompt, n: int) -> int:
    """Most tokens value n may have under ExtractiveProcessor: its gap (max_tokens), or "n/a" when
    that is longer."""
    return max(schema.attributes[n].max_tokens, len(schema.na_ids))


def max_new_tokens(schema: SchemaPrompt, extractive: bool) -> int:
    """Generation budget: layout.ar_max_new_tokens, plus room to finish "n/a" in a value whose gap is
    shorter than it (extractive), so that a forced output always reaches its eos."""
    extra = sum(value_budget(schema, n) - a.max_tokens for n, a in enumerate(schema.attributes))
    return ar_max_new_tokens(schema) + (extra if extractive else 0)


class ExtractiveProcessor(LogitsProcessor):
    """Constrained AR-JSON, as strict as HPD: every row writes exactly layout.ar_target's format, and
    each value obeys its attribute's slot constraint (constraints.slot_rules; by default a
    substring of its document or "n/a").

    Outside values the next token is forced (scaffold: keys in schema order, the terminator or key
    punctuation between values, '"}', eos), so a row can never stray from the format and a value
    can never hold JSON the model made up. Inside value n only the tokens its constraint state
    allows are allowed (HPD's rules; a free value: any token), at most max_tokens of them (HPD's
    gap): the value then must end
    (truncated[b][n] records that the constrained model would have gone on), or finish a fixed
    path such as "n/a" when on its way through it (state.finishing(), value_budget). Without the
    terminator in AR, the end token (the next key's first token, '"') ends a value only where the
    value may end. Greedy only (one new token per call: not for prompt lookup). spans: each row's
    extractive.DocIndex (None entries when no rule is a span)."""

    def __init__(self, schema: SchemaPrompt, spans: list[span.DocIndex | None], prompt_len: int):
        self.parts, self.ends = scaffold(schema)
        self.rules = constraints.slot_rules(schema)
        self.gaps = list(schema.gaps)
        self.end_is_text = not schema.value_end_in_ar  # the end token may also be a document token
        self.index = list(spans)
        self.prompt_len = prompt_len
        self.seen = 0  # generated tokens already pushed
        self.c: BatchedConstraint | None = None  # built on the first call, on the scores' device
        self._truncated = None

    def build(self, device) -> None:
        """Row b's value n is slot b * N + n of one BatchedConstraint; the scaffold position of every
        row (part, tokens of it written, inside the value after it, done) is a tensor too. Called on
        the first __call__ under generate; a decoder of its own (ar_honest.py) calls it first."""
        B, N = len(self.index), len(self.ends)
        specs = [(self.rules[n], self.index[b], self.ends[n]) for b in range(B) for n in range(N)]
        self.c = BatchedConstraint(specs, device)
        width = max(1, max(len(p) for p in self.parts))
        self.part_tab = torch.tensor([p + [0] * (width - len(p)) for p in self.parts], device=device)
        self.part_len = torch.tensor([len(p) for p in self.parts], device=device)
        self.gap = torch.tensor(self.gaps + [0], device=device)
        self.part = torch.zeros(B, dtype=torch.long, device=device)  # scaffold part, or the value after it
        self.at = torch.zeros(B, dtype=torch.long, device=device)  # tokens of that part written
        self.in_value = torch.zeros(B, dtype=torch.bool, device=device)
        self.done = torch.zeros(B, dtype=torch.bool, device=device)
        self._truncated = torch.zeros((B, N), dtype=torch.bool, device=device)
        self._settle(torch.ones(B, dtype=torch.bool, device=device))

    @property
    def truncated(self) -> list[list[bool]]:
        """[B][N]: the gap ended value n of row b where the constrained model would have gone on."""
        if self._truncated is None:
            return [[False] * len(self.ends) for _ in self.index]
        return self._truncated.tolist()

    def _slot(self) -> torch.Tensor:
        """[B] the slot of each row's current value (its last value once past them)."""
        return torch.arange(len(self.part), device=self.part.device) * len(self.ends) + self.part.clamp(
            max=len(self.ends) - 1
        )

    def _settle(self, rows: torch.Tensor) -> None:
        """Rows past the end of a scaffold part: into the value after it, or done after the close."""
        past = rows & ~self.done & ~self.in_value & (self.at >= self.part_len[self.part])
        last = self.part >= len(self.ends)
        self.in_value |= past & ~last
        self.done |= past & last

    def push(self, tok: torch.Tensor) -> None:
        """Every row generated tok [B]."""
        active = ~self.done
        slot = self._slot()
        ended = active & self.in_value & (tok == self.c.end[slot])
        going = (active & self.in_value & ~ended).nonzero().squeeze(1)
        self.c.push(slot[going], tok[going])
        forced = active & ~self.in_value  # a scaffold token (forced)
        self.at += forced.long()
        self.in_value &= ~ended  # the value ended: on to the next part
        self.part += ended.long()
        self.at = torch.where(ended, 0, self.at)
        self._settle(forced | ended)

    def _value_allowed(self, slot: torch.Tensor, vocab: int):
        """(rows, tokens, free) a value allows next (BatchedConstraint.allowed; a free value: every
        token), the end token only where the value may end when it is also a text token."""
        return self.c.allowed(slot, vocab, strict_end=self.end_is_text)

    def allowed(self, vocab: int, would_write):
        """-> (rows, tokens, every [B] bool): every row's allowed next tokens as (row, token) pairs;
        rows with every set (done rows, free values) allow every token. would_write(rows, pair rows,
        pair tokens, free) -> the greedy token [len(rows)] among those pairs (pair rows index rows): what
        the model would write in a value whose gap is full (the one place the scores are read)."""
        V = vocab
        every = self.done.clone()
        slot = self._slot()
        forced = ~self.done & ~self.in_value
        at = self.at.clamp(max=self.part_tab.shape[1] - 1)
        forced_tok = torch.where(forced, self.part_tab[self.part.clamp(max=len(self.parts) - 1), at], -1)
        value = ~self.done & self.in_value
        room = value & (self.c.length[slot] < self.gap[self.part])
        r = room.nonzero().squeeze(1)
        v_rows, v_toks, free = self._value_allowed(slot[r], V)
        every[r[free]] = True
        full = (value & ~room).nonzero().squeeze(1)  # the gap is full
        finish = self.c.finishing(slot[full])
        forced_tok[full] = torch.where(finish >= 0, finish, self.c.end[slot[full]])  # finish "n/a", or end
        judge = full[finish < 0]  # would the model have ended here?
        best = would_write(judge, *self._value_allowed(slot[judge], V))
        self._truncated[judge, self.part[judge]] = best != self.c.end[slot[judge]]
        one = (forced_tok >= 0).nonzero().squeeze(1)
        return torch.cat([r[v_rows], one]), torch.cat([v_toks, forced_tok[one]]), every

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.c is None:
            self.build(scores.device)
        new = input_ids[:, self.prompt_len + self.seen :]  # [B, tokens since the last call]
        self.seen = input_ids.shape[1] - self.prompt_len
        for k in range(new.shape[1]):  # one token per call: a loop over steps, not rows
            self.push(new[:, k])
        rows, toks, every = self.allowed(
            scores.shape[1], lambda r, *pairs: masked_choice(scores[r], *pairs)[0]
        )
        # the allowed logits copied into -inf: a few per row, not a mask over the vocabulary
        out = torch.full_like(scores, float("-inf"))
        out[rows, toks] = scores[rows, toks]
        out[every] = scores[every]
        return out


def extractive_values(
    schema: SchemaPrompt,
    table: span.TokenTable,
    gen: list[int],
    lps: list[float],
    truncated: list[bool],
) -> dict[str, ARValue]:
    """Values of a constrained output, read from its token ids (the scaffold is known, so nothing is
    parsed from text: a value is exactly its tokens' bytes, leading space dropped, a substring of
    the document; a character cut by the gap is dropped). Confidence: exp(mean logprob) of the
    value's tokens and its end token (not when the gap forced it), as in HPD. An empty value
    (whitespace only) reads "n/a", as in HPD. A choice's confidence is its path's probability
    (constraints: rule.path_confidence), as in HPD."""
    rules = constraints.slot_rules(schema)
    out = {}
    for n, (a, where) in enumerate(zip(schema.attributes, value_spans(schema, gen), strict=True)):
        if where is None:
            out[a.name] = ARValue(None, 0.0, len(gen))
            continue
        first, end = where
        ids = gen[first:end]
        text = b"".join(table.pieces[t] or b"" for t in ids).decode("utf-8", "ignore").strip() or NA
        sel = lps[first : end if truncated[n] else end + 1] or [0.0]
        path = getattr(rules[n], "path_confidence", False)
        conf = float(torch.tensor(sel).sum().exp() if path else torch.tensor(sel).mean().exp())
        out[a.name] = ARValue(text, conf, min(end + 1, len(gen)), truncated[n])
    return out


def left_pad(seqs: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """-> input_ids [B, L], attention_mask [B, L] (left padding, as generate expects)."""
    L = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (L - len(s)) + s for s in seqs], device=device)
    mask = torch.tensor([[0] * (L - len(s)) + [1] * len(s) for s in seqs], device=device)
    return ids, mask


def prompts(schema: SchemaPrompt, docs: list[list[int]], pad_id: int, device, after_prefix: bool):
    """Batched AR-JSON prompts (layout.build_ar_prompt) -> input_ids, attention_mask [B, L].
    after_prefix: the padding goes between the shared prefix and each document, so that every row
    starts with the prefix (its cache, prefilled once, serves every row); generate derives the
    positions from the mask, so each document still starts at position P, as in HPD."""
    if not after_prefix:
        return left_pad([build_ar_prompt(schema, d) for d in docs], pad_id, device)
    ids, mask = left_pad(docs, pad_id, device)
    P = len(schema.prefix_ids)
    prefix = torch.tensor(schema.prefix_ids, device=device)[None].expand(len(docs), P)
    return torch.cat([prefix, ids], 1), torch.cat([torch.ones_like(prefix), mask], 1)


def prefix_rows(prefix_cache, rows: int, capacity: int):
    """A fresh cache for a batch of rows, each starting with the prefix entries, preallocated for
    capacity entries (modeling.AppendLayer): every generate step writes its keys and values in
    place, instead of concatenating the whole cache again (DynamicCache's torch.cat per layer and
    step took a tenth of AR's time on the CPU)."""
    return expand_cache(prefix_cache, rows, capacity=capacity)


def value_confidences(
    tokenizer, gen: list[int], lps: list[float], text: str, names: list[str], values: dict[str, str | None]
) -> dict[str, ARValue]:
    """Map each value's character span back to the generated tokens -> exp(mean token logprob)."""
    ends, pos = [], 0
    for t in gen:  # approximate character offsets of every generated token
        pos += len(tokenizer.decode([t], skip_special_tokens=True))
        ends.append(pos)
    out = {}
    for name in names:
        val = values.get(name)
        if val is None:
            out[name] = ARValue(None, 0.0, len(gen))
            continue
        key = f'"{_quote(name)}": "'
        at = text.find(key)
        start = (at + len(key)) if at >= 0 else 0
        stop = start + len(val)
        idx = [i for i, e in enumerate(ends) if e > start and (i == 0 or ends[i - 1] <= stop)]
        sel = [lps[i] for i in idx] or [0.0]
        out[name] = ARValue(val, float(torch.tensor(sel).mean().exp()), (idx[-1] + 1) if idx else 0)
    return out


def read_outputs(
    tokenizer, schema: SchemaPrompt, new: torch.Tensor, lp: torch.Tensor, proc
) -> list[AROutput]:
    """One batch's generated ids new [B, T] and their log-probabilities lp [B, T] (under the
    constraint: renormalized over the allowed tokens, as in HPD) -> AROutput per row: read from the
    token ids under the constraint (proc: its ExtractiveProcessor), else parsed from the text."""
    names = [a.name for a in schema.attributes]
    outs = []
    for b in range(new.shape[0]):
        toks = new[b].tolist()
        if schema.ar_eos in toks:
            toks = toks[: toks.index(schema.ar_eos)]
        lps = lp[b, : len(toks)].tolist()
        text = tokenizer.decode(toks, skip_special_tokens=True)
        if proc is not None:
            table = span.TokenTable.from_tokenizer(tokenizer)
            vals = extractive_values(schema, table, toks, lps, proc.truncated[b])
        else:
            vals = value_confidences(tokenizer, toks, lps, text, names, parse_ar_json(text, names))
        outs.append(AROutput(text, vals, len(toks)))
    return outs


@torch.no_grad()
def generate_json(
    model,
    tokenizer,
    schema: SchemaPrompt,
    docs: list[list[int]],
    batch: int,
    prompt_lookup: int | None = None,
    spans: list[span.DocIndex | None] | None = None,
    prefix_cache=None,
) -> tuple[list[AROutput], int]:
    """Greedy AR-JSON for every document -> (outputs, forward passes). prompt_lookup forces batch 1.
    spans: per document, extractive.doc_index of the product text (None entries when no attribute
    is a span): constrained values (ExtractiveProcessor: the format forced, every value under its
    slot constraint, by default a substring of its document or "n/a", read from the token ids);
    not with prompt_lookup. Confidences then come from the constrained
    scores (renormalized over the allowed tokens), as in HPD. Without spans the output is free and
    parsed from its text (layout.parse_ar_json). prefix_cache: the shared prefix prefilled once
    (hpd.prefill_prefix), reused by every batch instead of recomputing the instruction per product,
    as serving engines with prefix caching do; None: every prompt computed whole."""
    if spans is not None and prompt_lookup:
        raise ValueError("extractive decoding is not available with prompt lookup")
    if prefix_cache is not None and prompt_lookup:
        # transformers' assisted generation runs its first forward over the whole prompt and cannot
        # start from a prefilled cache (it would see the prefix twice)
        raise ValueError("prompt lookup cannot start from a prefix cache")
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else schema.ar_eos
    batch = 1 if prompt_lookup else batch
    counter = ForwardCounter(model)
    outs: list[AROutput] = []
    try:
        for i in range(0, len(docs), batch):
            ids, mask = prompts(schema, docs[i : i + batch], pad_id, device, prefix_cache is not None)
            kw = {"prompt_lookup_num_tokens": prompt_lookup} if prompt_lookup else {}
            if prefix_cache is not None:
                budget = ids.shape[1] + max_new_tokens(schema, spans is not None)
                kw["cache"] = prefix_rows(prefix_cache, ids.shape[0], budget)
            proc = None if spans is None else ExtractiveProcessor(schema, spans[i : i + batch], ids.shape[1])
            chosen = ChosenLogprobs(ids.shape[1])  # last: it sees the scores greedy picks from
            sequences = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens(schema, spans is not None),
                do_sample=False,
                eos_token_id=schema.ar_eos,
                pad_token_id=pad_id,
                logits_processor=LogitsProcessorList([p for p in (proc, chosen) if p is not None]),
                **kw,
            )
            new = sequences[:, ids.shape[1] :]  # [B, T]
            outs += read_outputs(tokenizer, schema, new, chosen.table(*new.shape), proc)
    finally:
        counter.close()
    return outs, counter.count
