"""AR-JSON baseline (HF generate, batched over products, KV cache on) and prompt lookup decoding
(HF prompt_lookup_num_tokens, batch 1). Same prompt wording as HPD (layout.build_ar_prompt)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList

from . import extractive as span
from .layout import SchemaPrompt, _quote, ar_max_new_tokens, build_ar_prompt, parse_ar_json


@dataclass
class ARValue:
    text: str | None  # None: the key never appeared in the output
    confidence: float
    steps: int  # tokens generated up to the end of this value


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


class ExtractiveProcessor(LogitsProcessor):
    """Extractive AR-JSON: inside a value, only tokens that keep it a substring of its document
    (or "n/a"), and the value's end token once it is one; outside values, nothing is constrained.

    Follows each row's output against layout.ar_target: once the generated ids end with the next
    expected key segment (schema.key_ids[n]), the row is inside value n until its end token: the
    terminator when schema.value_end_in_ar, else the first token of the next key (or of '"}'), which
    also starts the next key. A row that strays from the format (other key tokens) stays
    unconstrained. Greedy only (one new token per call: not for prompt lookup)."""

    def __init__(self, schema: SchemaPrompt, spans: list[span.DocIndex], prompt_len: int):
        self.keys, self.na, self.eos = schema.key_ids, schema.na_ids, schema.ar_eos
        self.rules = [(schema.end_rule(n), schema.start_rule(n)) for n in range(len(self.keys))]
        if schema.value_end_in_ar:
            self.ends = [schema.terminator] * len(self.keys)
        else:
            nxt = [k[0] for k in self.keys[1:]] + [(schema.end_ids or [self.eos])[0]]
            self.ends = nxt
        self.index = list(spans)
        self.prompt_len = prompt_len
        self.gen: list[list[int]] = [[] for _ in spans]
        self.next_key = [0] * len(spans)
        self.state: list[span.SpanState | None] = [None] * len(spans)
        self.done = [False] * len(spans)
        self.seen = 0  # generated tokens already pushed

    def push(self, b: int, tok: int) -> None:
        """Row b generated tok."""
        if self.done[b]:
            return
        if tok == self.eos:
            self.done[b], self.state[b] = True, None
            return
        self.gen[b].append(tok)
        st = self.state[b]
        if st is not None:
            if tok != st.end:
                st.push(tok)
                return
            self.state[b] = None  # value ended; without <|eov|> its end token starts the next key
        n = self.next_key[b]
        key = self.keys[n] if n < len(self.keys) else None
        if key and self.gen[b][-len(key) :] == key:
            self.state[b] = span.SpanState(self.index[b], self.na, self.ends[n], *self.rules[n])
            self.next_key[b] = n + 1

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        new = input_ids[:, self.prompt_len + self.seen :].tolist()  # [B, tokens since the last call]
        self.seen = input_ids.shape[1] - self.prompt_len
        for b, toks in enumerate(new):
            for t in toks:
                self.push(b, int(t))
        allowed = [st.allowed() if st is not None else None for st in self.state]
        if all(a is None for a in allowed):
            return scores
        mask = span.allowed_mask(allowed, scores.shape[-1], scores.device)
        return scores.masked_fill(~mask, float("-inf"))


def left_pad(seqs: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """-> input_ids [B, L], attention_mask [B, L] (left padding, as generate expects)."""
    L = max(len(s) for s in seqs)
    ids = torch.tensor([[pad_id] * (L - len(s)) + s for s in seqs], device=device)
    mask = torch.tensor([[0] * (L - len(s)) + [1] * len(s) for s in seqs], device=device)
    return ids, mask


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


@torch.no_grad()
def generate_json(
    model,
    tokenizer,
    schema: SchemaPrompt,
    docs: list[list[int]],
    batch: int,
    prompt_lookup: int | None = None,
    spans: list[span.DocIndex] | None = None,
) -> tuple[list[AROutput], int]:
    """Greedy AR-JSON for every document -> (outputs, forward passes). prompt_lookup forces batch 1.
    spans: per document, extractive.doc_index of the product text: extractive values (ExtractiveProcessor); not with
    prompt_lookup. Confidences then come from the constrained scores (renormalized over the allowed
    tokens), as in HPD."""
    if spans is not None and prompt_lookup:
        raise ValueError("extractive decoding is not available with prompt lookup")
    device = next(model.parameters()).device
    names = [a.name for a in schema.attributes]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else schema.ar_eos
    batch = 1 if prompt_lookup else batch
    counter = ForwardCounter(model)
    outs: list[AROutput] = []
    try:
        for i in range(0, len(docs), batch):
            ids, mask = left_pad([build_ar_prompt(schema, d) for d in docs[i : i + batch]], pad_id, device)
            kw = {"prompt_lookup_num_tokens": prompt_lookup} if prompt_lookup else {}
            if spans is not None:
                proc = ExtractiveProcessor(schema, spans[i : i + batch], ids.shape[1])
                kw.update(logits_processor=LogitsProcessorList([proc]), output_scores=True)
            res = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_new_tokens=ar_max_new_tokens(schema),
                do_sample=False,
                eos_token_id=schema.ar_eos,
                pad_token_id=pad_id,
                return_dict_in_generate=True,
                output_logits=True,
                **kw,
            )
            new = res.sequences[:, ids.shape[1] :]  # [B, T]
            raw = res.scores if spans is not None else res.logits  # constrained scores when extractive
            lp = torch.stack(raw, 1).float().log_softmax(-1) if raw else None  # [B, T, V]
            for b in range(new.shape[0]):
                toks = new[b].tolist()
                if schema.ar_eos in toks:
                    toks = toks[: toks.index(schema.ar_eos)]
                if lp is not None and lp.shape[1] >= len(toks):
                    lps = lp[b, torch.arange(len(toks)), new[b, : len(toks)]].tolist()
                else:  # assisted decoding may not return one logit row per token
                    lps = [0.0] * len(toks)
                text = tokenizer.decode(toks, skip_special_tokens=True)
                vals = parse_ar_json(text, names)
                outs.append(
                    AROutput(text, value_confidences(tokenizer, toks, lps, text, names, vals), len(toks))
                )
    finally:
        counter.close()
    return outs, counter.count
