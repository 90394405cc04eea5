"""The output layer and its losses in chunks of tokens, each chunk's gradient taken as it is computed.

The unchunked path (losses.training_logits, then the cross-entropies) holds the logits of every
labelled token over the whole vocabulary, [M, V]: about 1,600 x 262,144 floats a step for Gemma 3,
1.7 GB, written, cast, log-softmaxed twice (the value loss and the extractive one), masked and
differentiated, and a third of a step's time went there (tools/bench/train_speed.py). Here the rows
go through in chunks of about 64 MB of logits: a chunk's logits, both losses and their gradient
with respect to the logits (softmax minus the one-hot, at each token's weight) are computed
together, and the gradient is multiplied straight back through the output layer, so what is kept
for backward is the gradient of the hidden states [M, D] (and of the trained token rows), not the
logits. The numbers are the unchunked path's: the same bfloat16 or float32 logits, cast to float32
before the softmax, and the same casts on the way back.

The extractive loss's allowed tokens are a few hundred of the vocabulary: its softmax is taken over
those entries only (gathered), not over a masked copy of the whole row.

It needs a frozen output layer (the LoRA recipes: the trained ``<|eov|>`` row is handled apart, as
losses.output_logits does with sparse rows); the loss is the one a step descends, value plus the
extractive loss at its weight, and backward scales the kept gradients by its incoming gradient.
"""

from __future__ import annotations

import torch

# bytes of float32 logits per chunk: large enough that the output layer's matmul runs at speed,
# small enough to stay out of the way of the rest of the step's memory
CHUNK_BYTES = 64 * 2**20


class FrozenHead:
    """The output layer as the chunked loss needs it: the frozen weight [V, D], and the trained token
    rows that replace some of its columns (ids, their rows [k, D] as a trained parameter) or None."""

    def __init__(self, weight: torch.Tensor, ids: list[int] | None = None, rows: torch.Tensor | None = None):
        if weight.requires_grad:
            raise ValueError("the chunked output-layer loss needs a frozen output layer (a LoRA recipe)")
        self.weight, self.rows = weight, rows
        self.ids = torch.tensor(ids or [], dtype=torch.long, device=weight.device)


def chunked_head_loss(
    hidden: torch.Tensor,
    head: FrozenHead,
    labels: torch.Tensor,
    weights: torch.Tensor | None,
    choices: tuple[torch.Tensor, torch.Tensor] | None,
    extractive_weight: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """hidden [M, D] of the labelled tokens, labels [M], weights [M] (None: a plain mean), choices
    (free bool [M]: the tokens extractive decoding leaves unconstrained; pairs [2, N]: a labelled
    token and a token id it allows, by labelled token: row_packing.collate's sparse choices) or None
    (no extractive loss) -> (the loss descended: value + extractive_weight x extractive, with its
    graph to hidden and the trained rows; the terms, detached, for the log)."""
    rows = head.rows if head.rows is not None else hidden.new_zeros((0, hidden.shape[1]))
    loss, value, extractive = _ChunkedHeadLoss.apply(
        hidden, rows, head, labels, weights, choices, extractive_weight
    )
    terms = {"value": value}
    if choices is not None and extractive_weight > 0:
        terms["extractive"] = extractive
    return loss, terms


class _ChunkedHeadLoss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, rows, head, labels, weights, choices, extractive_weight):
        M = hidden.shape[0]
        w = weights.float() if weights is not None else hidden.new_ones(M, dtype=torch.float32)
        w_value = w / w.sum().clamp_min(1e-9)
        extract = choices is not None and extractive_weight > 0
        if extract:
            free, pairs = choices
            w_extractive = torch.where(free, 0.0, w)
            w_extractive = w_extractive / w_extractive.sum().clamp_min(1e-9)
            # where each token's allowed pairs begin (pairs are ordered by token)
            bounds = torch.searchsorted(pairs[0], torch.arange(0, M + 1, device=pairs.device)).tolist()
        grad_hidden = torch.empty_like(hidden)
        grad_rows = torch.zeros(rows.shape, dtype=torch.float32, device=rows.device)
        value = hidden.new_zeros((), dtype=torch.float32)
        extractive = hidden.new_zeros((), dtype=torch.float32)
        step = max(1, CHUNK_BYTES // (4 * head.weight.shape[0]))
        for start in range(0, M, step):
            part = slice(start, min(M, start + step))
            chunk_extract = None
            if extract:
                chunk_pairs = pairs[:, bounds[start] : bounds[part.stop]].clone()
                chunk_pairs[0] -= start  # the chunk's own token index
                chunk_extract = (free[part], chunk_pairs, w_extractive[part], extractive_weight)
            v, e = _chunk(
                hidden[part],
                rows,
                head,
                labels[part],
                w_value[part],
                chunk_extract,
                grad_hidden[part],
                grad_rows,
            )
            value += v
            extractive += e
        ctx.save_for_backward(grad_hidden, grad_rows.to(rows.dtype))
        loss = value + extractive_weight * extractive
        return loss, value.detach(), extractive.detach()

    @staticmethod
    def backward(ctx, grad_loss, _grad_value, _grad_extractive):
        grad_hidden, grad_rows = ctx.saved_tensors
        no_gradient = (None,) * 5  # head, labels, weights, choices, extractive_weight
        return grad_hidden * grad_loss.to(grad_hidden.dtype), grad_rows * grad_loss, *no_gradient


def _chunk(h, rows, head: FrozenHead, labels, w_value, extract, grad_hidden_out, grad_rows_out):
    """One chunk: its logits, its share of both losses, and the gradient of the loss descended (value +
    the extractive weight x extractive) written into grad_hidden_out (its rows) and added into
    grad_rows_out. extract: (free, pairs, token weights, the extractive weight) or None."""
    raw = h @ head.weight.T  # as the frozen layer computes them (bfloat16 on a bfloat16 base)
    if len(head.ids):
        raw.index_copy_(1, head.ids, h @ rows.to(h.dtype).T)
    compute_dtype = raw.dtype
    logits = raw.float()
    del raw
    picked = logits.gather(1, labels[:, None]).squeeze(1)
    extractive = logits.new_zeros(())
    sparse = None
    if extract is not None:
        extractive, sparse = _extractive_part(logits, labels, picked, *extract)
    lse = torch.logsumexp(logits, dim=1)
    value = ((lse - picked) * w_value).sum()
    # the gradient of both shares with respect to the logits, in place of the logits
    grad = logits.sub_(lse[:, None]).exp_().mul_(w_value[:, None])
    grad.scatter_add_(1, labels[:, None], -w_value[:, None])
    if sparse is not None:
        at_row, at_token, amount = sparse
        grad.index_put_((at_row, at_token), amount, accumulate=True)
    grad = grad.to(compute_dtype)
    if len(head.ids):
        grad_trained = grad.index_select(1, head.ids)  # [c, k]
        grad.index_fill_(1, head.ids, 0)
        grad_rows_out += (grad_trained.T @ h).float()
        grad_hidden_out.copy_(grad @ head.weight + grad_trained @ rows.to(h.dtype))
    else:
        grad_hidden_out.copy_(grad @ head.weight)
    return value, extractive


def _extractive_part(logits, labels, picked, free, pairs, w_extractive, extractive_weight):
    """The extractive loss of a chunk's constrained tokens: the cross-entropy over the tokens each
    allows (pairs [2, N] of the chunk's token, allowed id), computed on those entries only -> (its
    share at the token weights, (rows, tokens, the gradient of extractive_weight x that share) to add
    to the logits' gradient at those entries, the label's -1 included)."""
    local = (~free).nonzero().squeeze(1)
    if len(local) == 0:
        return logits.new_zeros(()), None
    slot = torch.full((len(free),), -1, dtype=torch.long, device=free.device)
    slot[local] = torch.arange(len(local), device=free.device)
    at_row, token = pairs[0], pairs[1]
    pick = slot[at_row]
    values = logits[at_row, token]
    n = len(local)
    peak = values.new_full((n,), float("-inf")).scatter_reduce(0, pick, values, "amax")
    scaled = (values - peak[pick]).exp()
    total = values.new_zeros(n).scatter_add(0, pick, scaled)
    lse = peak + total.log()
    w = w_extractive[local]
    share = ((lse - picked[local]) * w).sum()
    w = w * extractive_weight
    amount = scaled / total[pick] * w[pick]
    # the label's -1: one more entry per token (index_put_ accumulates duplicates)
    at_row = torch.cat([at_row, local])
    token = torch.cat([token, labels[local]])
    amount = torch.cat([amount, -w])
    return share, (at_row, token, amount)
