"""AR-JSON baseline (HF generate, batched over products, KV cache on) and prompt lookup decoding
(HF prompt_lookup_num_tokens, batch 1). Same prompt wording as HPD (layout.build_ar_prompt)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

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
) -> tuple[list[AROutput], int]:
    """Greedy AR-JSON for every document -> (outputs, forward passes). prompt_lookup forces batch 1."""
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
            lp = torch.stack(res.logits, 1).float().log_softmax(-1) if res.logits else None  # [B, T, V]
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
