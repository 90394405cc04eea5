"""Whole-option scores of enumerations against HPD's greedy walk down the options' trie (issue #47
point 1: why is the choice among allowed values near the majority answer?).

    python -m tools.bench.option_scores --data ../shared/data/ave/implicitave/Food/val.tsv --sample 60

For every sampled product of an ImplicitAVE file (one judged attribute each, never "n/a"), every
allowed value of the judged attribute is laid out under its slot in HPD's own row (the prefix, the
documents stacked, their keys with gaps; each option a slot of its own at its slot's positions, so
that the HPD mask shows it the prompt and itself only: what HPD computes for it alone) and scored
in that one forward:
    sum   log P(option tokens, terminator) under the whole vocabulary
    mean  the same per token
    path  the greedy walk's own measure: each token's probability among the tokens the trie allows
          there, multiplied along the path (its argmax is what an exact search of the trie picks)
    walk  the greedy walk replayed on these scores (the decoder's choice, from this forward)
    sum_less_prior  sum less the value's sum under a content-free document ("N/A"): the prior of
          a few common values taken out (contextual calibration)
and HPD's decode once more with prompt lines that do not list the values (decode_unlisted).
Printed per file as one JSON line: the accuracy of HPD's decode (the engine, greedy) and of each
argmax, the majority floor, how often `walk` agrees with the decode (the check that these scores
are the decoder's own), and the seconds of each. Nothing here trains or calibrates anything.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass

import torch

from extraction.engine import data as ave
from extraction.engine.api import Document, Extractor, finish
from extraction.engine.decode import masks
from extraction.engine.decode.constraints import ChoiceRule
from extraction.engine.evaluate.decoder_runs import attribute_types
from extraction.engine.layout import PROMPT_DOC, PROMPT_SLOT, SchemaPrompt, build_hpd_layout, doc_ids
from extraction.engine.metric import outcome
from extraction.engine.modeling import cut_window, expand_cache, forward_hidden, logits

MEASURES = ("sum", "mean", "path", "walk", "sum_less_prior")
CONTENT_FREE = "N/A"  # the document the options' prior is read under (contextual calibration)
BUDGET = 8  # a text attribute's gap (enumerations get the gap their longest option needs)
OPTION_SLOTS = 1_000_000  # slot ids of the laid-out values start here, past every real slot


def option_paths(rule: ChoiceRule) -> dict[str, list[int]]:
    """value -> its token ids in the slot (terminator excluded), read back from the rule's trie."""
    out, stack = {}, [(rule.root, [])]
    while stack:
        node, path = stack.pop()
        if node.value is not None:
            out[node.value] = path
        stack.extend((child, [*path, tok]) for tok, child in node.children.items())
    return out


@dataclass
class Scored:
    """One choice slot's values scored: value -> the log-probability of each of its tokens and of
    the terminator after them, under the whole vocabulary; with among_allowed, the same among the
    tokens the trie allows at each step (the walk's measure)."""

    full: dict[str, list[float]]
    allowed: dict[str, list[float]] | None = None


@torch.no_grad()
def score_row(
    model,
    schema: SchemaPrompt,
    prefix_cache,
    docs: list[list[int]],
    pairs: list[tuple[int, int]],
    among_allowed: bool = False,
    one_slot: bool = False,
) -> list[Scored]:
    """The documents stacked in one row after the prefix's cache, every value of every choice slot
    (j, n) (document j of the row, attribute n, whose rule is a ChoiceRule) laid out as a slot of its
    own -> one Scored per pair, from one forward. one_slot: a pair's values share one slot, so they
    see each other (the tests' negative control)."""
    device = next(model.parameters()).device
    layout = build_hpd_layout(schema, docs, with_prefix=False)
    ids, pos = list(layout.input_ids), list(layout.position_ids)
    doc, slot = list(layout.doc_ids), list(layout.slot_ids)
    placed = []  # per pair: (its paths, {value: row indices of its tokens})
    own = OPTION_SLOTS  # the next value's slot id
    for j, n in pairs:
        paths, where = option_paths(schema.rules[n]), {}
        start = layout.slot_start[j][n]
        for value, path in paths.items():
            where[value] = list(range(len(ids), len(ids) + len(path)))
            ids += path
            pos += [start + i for i in range(len(path))]
            doc += [j] * len(path)
            slot += [own] * len(path)
            own += 0 if one_slot else 1
        own += 1
        placed.append((paths, where))
    hidden = _forward(model, prefix_cache, *(torch.tensor([x], device=device) for x in (ids, pos, doc, slot)))
    term = schema.terminator
    out = []
    for (j, n), (paths, where) in zip(pairs, placed, strict=True):
        key = layout.key_end[j][n]
        full, allowed = {}, {} if among_allowed else None
        for value, path in paths.items():
            lp = torch.log_softmax(logits(model, hidden[[key, *where[value]]]), -1)  # each predicts the next
            targets = [*path, term]
            full[value] = [float(lp[i, t]) for i, t in enumerate(targets)]
            if allowed is not None:
                allowed[value] = _among_allowed(schema.rules[n], targets, lp, term)
        out.append(Scored(full, allowed))
    return out


def _forward(model, prefix_cache, ids, pos, doc, slot) -> torch.Tensor:
    """One row [1, T] after the prefix's cache under the three-part mask -> hidden states [T, D]."""
    P = prefix_cache.get_seq_length()
    prompt = torch.full((1, P), PROMPT_DOC, device=ids.device)
    kv_pos = torch.cat([torch.arange(P, device=ids.device)[None], pos], 1)
    kv_doc = torch.cat([prompt, doc], 1)
    kv_slot = torch.cat([torch.full((1, P), PROMPT_SLOT, device=ids.device), slot], 1)
    mask = masks.additive(masks.allowed(pos, doc, slot, kv_pos, kv_doc, kv_slot), model.dtype)
    mask = masks.per_layer(mask, pos, kv_pos, cut_window(model.config))
    return forward_hidden(model, ids, pos, mask, expand_cache(prefix_cache, 1))[0]


def _among_allowed(rule: ChoiceRule, targets: list[int], lp: torch.Tensor, term: int) -> list[float]:
    """Each step's log-probability among the tokens the trie allows there."""
    node, out = rule.root, []
    for i, t in enumerate(targets):
        allowed = node.allowed(term).to(lp.device)
        out.append(float(lp[i, t] - torch.logsumexp(lp[i, allowed], 0)))
        node = node.children.get(t, node)
    return out


def chosen(scored: Scored, paths: dict[str, list[int]], term: int, prior: Scored | None = None) -> dict:
    """measure -> the value it picks (MEASURES). The walk: from the root, the allowed token of the
    highest probability (the lowest id on a tie, as the decoder's argmax) until the terminator."""
    full, allowed = scored.full, scored.allowed
    picks = {
        "sum": max(full, key=lambda v: sum(full[v])),
        "mean": max(full, key=lambda v: sum(full[v]) / len(full[v])),
        "path": max(allowed, key=lambda v: sum(allowed[v])),
    }
    if prior is not None:  # each value's score less its score under a content-free document
        picks["sum_less_prior"] = max(full, key=lambda v: sum(full[v]) - sum(prior.full[v]))
    step: dict[tuple, dict[int, float]] = {}  # the tokens so far -> {allowed token: its log-probability}
    ends: dict[tuple, str] = {}
    for value, path in paths.items():
        for i, t in enumerate([*path, term]):
            step.setdefault(tuple(path[:i]), {})[t] = allowed[value][i]
        ends[tuple(path)] = value
    walk: tuple = ()
    while True:
        here = step[walk]
        tok = min(here, key=lambda t: (-here[t], t))
        if tok == term:
            picks["walk"] = ends[walk]
            return picks
        walk = (*walk, tok)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="an ImplicitAVE DOMAIN/val.tsv")
    p.add_argument("--model", default=None, help="model directory (default: the shipped default)")
    p.add_argument("--sample", type=int, default=60, help="products drawn from the file (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stack", type=int, default=8, help="documents per scoring row")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    products = ave.load(args.data)
    if args.sample and args.sample < len(products):
        products = random.Random(args.seed).sample(products, args.sample)
    types = attribute_types(argparse.Namespace(data=args.data, options=None), products)
    ex = Extractor(args.model, calibrate=False)
    schemas = ave.schemas(products)
    unlisted = Extractor(args.model, calibrate=False)
    unlisted.enum_values_in_prompt = False  # the prompt lines say the attribute's name only
    right = {m: 0 for m in ("decode", "decode_unlisted", *MEASURES)}
    agree, pairs, seconds = 0, 0, {"decode": 0.0, "scores": 0.0}
    for cat, idx in ave.by_category(products).items():
        attrs = [types.spec(a, BUDGET, cat) for a in schemas[cat]]
        schema = ex.schema(attrs)
        docs = [Document(products[i].key, products[i].text) for i in idx]
        t0 = time.perf_counter()
        with torch.inference_mode():
            decoded, _ = ex.extract(docs, attrs, decoder="hpd", stack=1, rows=16)
        seconds["decode"] += time.perf_counter() - t0
        with torch.inference_mode():
            bare, _ = unlisted.extract(docs, attrs, decoder="hpd", stack=1, rows=16)
        names = [a.name for a in attrs]
        prefix, _ = ex.prefix_cache(schema)
        enums = [n for n, rule in enumerate(schema.rules) if isinstance(rule, ChoiceRule)]
        with torch.inference_mode():
            free = doc_ids(ex.tokenizer, CONTENT_FREE)
            priors = dict(
                zip(enums, score_row(ex.model, schema, prefix, [free], [(0, n) for n in enums]), strict=True)
            )
        for first in range(0, len(idx), args.stack):
            chunk = idx[first : first + args.stack]
            pairs_ = [
                (j, names.index(a))
                for j, i in enumerate(chunk)
                for a in products[i].gold
                if a in names and isinstance(schema.rules[names.index(a)], ChoiceRule)
            ]
            t0 = time.perf_counter()
            with torch.inference_mode():
                docs_ = [doc_ids(ex.tokenizer, products[i].text) for i in chunk]
                scored = score_row(ex.model, schema, prefix, docs_, pairs_, among_allowed=True)
            seconds["scores"] += time.perf_counter() - t0
            for (j, n), scores in zip(pairs_, scored, strict=True):
                rule, product = schema.rules[n], chunk[j]
                picks = chosen(scores, option_paths(rule), schema.terminator, priors[n])
                gold = products[product].gold[names[n]]
                got = decoded[idx.index(product)][names[n]].text
                pairs += 1
                right["decode"] += outcome(got, gold) == "VC"
                right["decode_unlisted"] += outcome(bare[idx.index(product)][names[n]].text, gold) == "VC"
                for m in MEASURES:
                    right[m] += outcome(finish(rule, picks[m]), gold) == "VC"
                agree += finish(rule, picks["walk"]) == got
    floor = ave.majority_floor(args.data, products)
    line = {
        "data": args.data,
        "pairs": pairs,
        "accuracy": {m: round(r / max(pairs, 1), 3) for m, r in right.items()},
        "majority_floor": round(floor["accuracy"], 3) if floor else None,
        "walk_agrees_with_decode": round(agree / max(pairs, 1), 3),
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }
    sys.stdout.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
