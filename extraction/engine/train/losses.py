"""The training losses, all from one forward pass with the HPD mask: cross-entropy on the value
tokens and terminators (both formats), the extractive loss over the tokens extractive decoding
allows, and the language-model loss on the documents' own text."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch

from extraction.engine.decode.masks import hpd_training_mask
from extraction.engine.modeling import cut_window
from extraction.engine.train.doc_blocks import blocked_hidden
from extraction.engine.train.head_loss import FrozenHead, chunked_head_loss
from extraction.engine.train.phases import phase
from extraction.engine.train.row_packing import IGNORE

log = logging.getLogger("extraction.train")


def training_hidden(model, batch: dict[str, torch.Tensor], attention: str = "dense") -> torch.Tensor:
    """The training forward: one pass with the HPD mask (per layer type for a sliding-window model
    whose forward takes one: modeling.cut_window) -> last hidden states [B, T, H]. attention
    "blocks": the same mask by document blocks (doc_blocks.py), no score between two documents."""
    device = next(model.parameters()).device
    dtype = next(model.parameters()).dtype
    b = {k: batch[k].to(device) for k in ("input_ids", "position_ids", "doc_ids", "slot_ids")}
    if attention == "blocks":
        return blocked_hidden(causal_lm(model), b)
    window = cut_window(causal_lm(model).config)
    with phase("forward: HPD mask"):
        mask = hpd_training_mask(b["position_ids"], b["doc_ids"], b["slot_ids"], dtype, window)
    with phase("forward: body"):
        return (
            causal_lm(model)
            .base_model(
                input_ids=b["input_ids"], position_ids=b["position_ids"], attention_mask=mask, use_cache=False
            )
            .last_hidden_state
        )


def training_logits(
    model,
    batch: dict[str, torch.Tensor],
    only_labeled: bool = True,
    hidden=None,
    key="labels",
    sparse_rows: bool = False,
):
    """The training forward -> (logits [M, V] float32, labels [M]) for batch[key] ("labels": value
    tokens; "lm_labels": document text). hidden: training_hidden's output, to reuse one forward.

    With only_labeled, logits are computed only where a label is (M = labeled tokens); else for
    all tokens ([B*T, V], labels -100 where none). sparse_rows: output_logits'.
    """
    if hidden is None:
        hidden = training_hidden(model, batch)
    labels = batch[key].to(hidden.device)
    if only_labeled:
        sel = labels != IGNORE
        hidden, labels = hidden[sel], labels[sel]
    else:
        hidden, labels = hidden.reshape(-1, hidden.shape[-1]), labels.reshape(-1)
    logits = output_logits(causal_lm(model), hidden, sparse_rows).float()
    return logits, labels


def trained_token_rows(module) -> tuple[torch.nn.Module, list[int], torch.nn.Parameter] | None:
    """(the frozen layer, the token ids, their trained rows) of a layer under peft's trainable
    tokens (the adapter's ``<|eov|>`` row), or None for any other layer."""
    adapter = getattr(module, "token_adapter", None)
    names = getattr(adapter, "active_adapters", [])
    if adapter is None or adapter.merged or adapter.disable_adapters or len(names) != 1:
        return None
    return adapter.base_layer, list(adapter.token_indices[names[0]]), adapter.trainable_tokens_delta[names[0]]


def output_logits(lm, hidden: torch.Tensor, sparse_rows: bool = False) -> torch.Tensor:
    """The output layer on hidden [M, D] -> [M, V]. sparse_rows: where peft trains a few token rows of
    a frozen output layer, the frozen layer runs as it is and only the trained rows' columns are
    computed apart, the same numbers as peft's forward (the trained rows written into a copy of the
    whole matrix, 262,144 x 640 for Gemma 3), without that copy and without backward's gradient
    for the whole matrix (as many multiply-adds as the layer's forward), of which peft keeps a row."""
    head = lm.get_output_embeddings()
    rows = trained_token_rows(head) if sparse_rows else None
    if rows is None:
        return head(hidden)
    frozen, ids, trained = rows
    out = frozen(hidden)  # [M, V]; the frozen weight needs no gradient
    index = torch.tensor(ids, device=out.device)
    return out.index_copy_(-1, index, hidden @ trained.to(hidden.dtype).T)  # [M, len(ids)] columns


def causal_lm(model):
    """The causal LM under a peft wrapper (its LoRA layers sit inside it), or the model itself."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def weighted_mean(losses: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """The mean of per-token losses, each at its row's data-set weight (plain mean without)."""
    if weights is None:
        return losses.mean()
    return (losses * weights).sum() / weights.sum().clamp_min(1e-9)


def extractive_loss(
    logits: torch.Tensor, labels: torch.Tensor, choices: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Cross-entropy over only the tokens extractive decoding allows at each value token: the
    choice the decoder really makes (which word of the document starts the value, where it ends,
    or n/a), so the model learns to rank the document's words rather than the whole vocabulary.
    Tokens the decoder does not constrain (rows of all True) are left to the ordinary loss."""
    constrained = ~choices.all(dim=1)
    if not bool(constrained.any()):
        return logits.new_zeros(())
    masked = logits[constrained].masked_fill(~choices[constrained], float("-inf"))
    losses = torch.nn.functional.cross_entropy(masked, labels[constrained], reduction="none")
    return weighted_mean(losses, None if weights is None else weights[constrained])


def step_losses(model, batch: dict[str, torch.Tensor], cfg, device: str) -> tuple[dict, torch.Tensor]:
    """The loss terms of one step, from one forward pass, and the loss it descends: "value"
    (cross-entropy on the value tokens and terminators, both formats), "extractive" and "lm" when
    their weights are on. cfg: the phase's train.TrainConfig (autocast, the loss weights, and
    chunked_loss: the output layer and its losses by chunks of tokens, head_loss.py)."""
    with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=cfg.autocast == "bf16"):
        hidden = training_hidden(model, batch, cfg.attention)
        with phase("forward: output layer and losses"):
            sparse = cfg.sparse_token_rows
            lm = None
            if cfg.lm_weight > 0:
                lm = training_logits(model, batch, hidden=hidden, key="lm_labels", sparse_rows=sparse)
            if cfg.chunked_loss:
                return chunked_terms(model, batch, hidden, cfg, lm)
            logits, labels = training_logits(model, batch, hidden=hidden, sparse_rows=sparse)
    with phase("forward: output layer and losses"):
        terms = loss_terms(logits, labels, batch, cfg, lm)
        return terms, total_loss(terms, cfg)


def chunked_terms(model, batch: dict[str, torch.Tensor], hidden: torch.Tensor, cfg, lm=None):
    """step_losses' terms and loss with the value and extractive losses taken by head_loss.py."""
    labels = batch["labels"].to(hidden.device)
    sel = labels != IGNORE
    head = causal_lm(model).get_output_embeddings()
    rows = trained_token_rows(head)
    frozen = FrozenHead(head.weight) if rows is None else FrozenHead(rows[0].weight, rows[1], rows[2])
    choices = None
    if cfg.extractive_weight > 0:
        choices = (batch["choice_free"].to(hidden.device), batch["choice_pairs"].to(hidden.device))
    weights = batch["weights"].to(hidden.device) if "weights" in batch else None
    loss, terms = chunked_head_loss(hidden[sel], frozen, labels[sel], weights, choices, cfg.extractive_weight)
    if lm is not None and len(lm[1]):
        terms["lm"] = torch.nn.functional.cross_entropy(lm[0].float(), lm[1])
        loss = loss + cfg.lm_weight * terms["lm"]
    return terms, loss


def loss_terms(logits, labels, batch: dict[str, torch.Tensor], cfg, lm=None) -> dict:
    """step_losses' terms from the value logits and labels (and the lm ones, when on)."""
    logits = logits.float()
    weights = batch["weights"].to(logits.device) if "weights" in batch else None
    terms = {
        "value": weighted_mean(torch.nn.functional.cross_entropy(logits, labels, reduction="none"), weights)
    }
    if cfg.extractive_weight > 0:
        terms["extractive"] = extractive_loss(logits, labels, batch["choices"].to(logits.device), weights)
    if lm is not None and len(lm[1]):
        terms["lm"] = torch.nn.functional.cross_entropy(lm[0].float(), lm[1])
    return terms


def total_loss(terms: dict[str, torch.Tensor], cfg) -> torch.Tensor:
    """The loss a step descends: the value loss plus each other term at its weight in cfg."""
    loss = terms["value"]
    if "extractive" in terms:
        loss = loss + cfg.extractive_weight * terms["extractive"]
    if "lm" in terms:
        loss = loss + cfg.lm_weight * terms["lm"]
    return loss


@dataclass
class LossLog:
    """The loss terms' means since the last log line (logged with the step's progress), and the
    history of those means that training.json keeps."""

    seen: dict[str, float] = field(default_factory=dict)
    seen_n: int = 0
    history: list[dict] = field(default_factory=list)

    def add(self, terms: dict[str, torch.Tensor]) -> None:
        for name, value in terms.items():
            self.seen[name] = self.seen.get(name, 0.0) + float(value.detach())
        self.seen_n += 1

    def flush(self, step: int, steps: int, lr: float, elapsed: float, epoch: int, tokens: int) -> None:
        means = {("loss" if k == "value" else k): round(v / self.seen_n, 4) for k, v in self.seen.items()}
        self.history.append({"step": step, **means, "lr": lr, "minutes": round(elapsed / 60, 2)})
        log.info(
            "step %d/%d %s lr %.2e epoch %d tokens %d %.1f min %.0f tok/s",
            step,
            steps,
            " ".join(f"{k} {v:.4f}" for k, v in means.items()),
            lr,
            epoch,
            tokens,
            elapsed / 60,
            tokens / max(1e-9, elapsed),
        )
        self.seen, self.seen_n = {}, 0
