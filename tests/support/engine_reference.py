"""Plain forms of what the engine's decoders do batched, for the engine's tests (no Django).

The decoders keep a SpanState per slot and hand masked_choice the allowed (row, token) pairs they
build in tensors; these spell the same one step at a time, so a test can say what is allowed.
"""

import torch
from transformers import LogitsProcessor

from extraction.engine.decode.extractive import FREE, WORD, DocIndex, SpanState
from extraction.engine.decode.token_masks import allowed_mask


def allowed_tokens(
    index: DocIndex,
    value: list[int],
    na: list[int],
    end: int,
    end_rule: int = FREE,
    start_rule: int = WORD,
) -> list[int]:
    """Allowed next tokens after `value` (the ids emitted so far) for a document."""
    state = SpanState(index, na, end, end_rule, start_rule)
    for t in value:
        state.push(t)
    return state.allowed()


def allowed_pairs(allowed: list, vocab: int, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row allowed sets (as allowed_mask) -> (rows, tokens, free) as masked_choice takes them."""
    rows, toks = allowed_mask(allowed, vocab, device).nonzero(as_tuple=True)
    free = torch.tensor([a is None for a in allowed], dtype=torch.bool, device=device)
    return rows, toks, free


def forced_token(gen: list[int], schema) -> int | None:
    """The AR target's next format token after gen (keys, '"}', eos); None inside a value."""
    i = 0
    for key in schema.key_ids:
        for t in key:
            if i == len(gen):
                return t
            if gen[i] != t:
                return None
            i += 1
        while i < len(gen) and gen[i] != schema.terminator:  # the value: free
            i += 1
        if i == len(gen):
            return None
        i += 1
    for t in [*schema.end_ids, schema.ar_eos]:
        if i == len(gen):
            return t
        i += 1
    return None


class ForceFormat(LogitsProcessor):
    """Test helper: outside values, force the AR target's keys, '"}' and eos (a random model would
    never write them) and leave values free: the unconstrained control (ar.ExtractiveProcessor
    forces the format itself)."""

    def __init__(self, schema, prompt_len):
        self.schema, self.prompt_len = schema, prompt_len

    def __call__(self, input_ids, scores):
        for b, gen in enumerate(input_ids[:, self.prompt_len :].tolist()):
            tok = forced_token(gen, self.schema)
            if tok is not None:
                scores[b] = float("-inf")
                scores[b, tok] = 0.0
        return scores
