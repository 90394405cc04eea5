"""The three-part HPD attention mask (HPD.md): position, document, slot.

A query may attend to a cache entry only where all three hold:
    entry position <= query position
    entry doc is the prefix (-1) or the query's doc
    entry slot is a prompt token (-1) or the query's slot
Masks are additive float (0 = attend, finfo.min = masked), shaped (B, 1, Q, KV): eager attention
adds them to the scores and sdpa accepts them as they are. finfo.min instead of -inf keeps a fully
masked padding row finite (no NaN leaks into the cache).

At decode time the mask is built once for the prompt (one row per slot, since a slot's visible
prompt entries do not change while it grows inside its gap) and extended per step by an equality
test over the generated entries: a generated entry is visible to exactly its own slot.
"""

from __future__ import annotations

import torch

from extraction.engine.layout import PROMPT_DOC, PROMPT_SLOT


def allowed(
    q_pos: torch.Tensor,
    q_doc: torch.Tensor,
    q_slot: torch.Tensor,
    kv_pos: torch.Tensor,
    kv_doc: torch.Tensor,
    kv_slot: torch.Tensor,
) -> torch.Tensor:
    """q_*: [B, Q], kv_*: [B, KV] -> bool [B, Q, KV] (True = attend)."""
    pos_ok = kv_pos[:, None, :] <= q_pos[:, :, None]
    doc_ok = (kv_doc[:, None, :] == PROMPT_DOC) | (kv_doc[:, None, :] == q_doc[:, :, None])
    slot_ok = (kv_slot[:, None, :] == PROMPT_SLOT) | (kv_slot[:, None, :] == q_slot[:, :, None])
    return pos_ok & doc_ok & slot_ok


def additive(ok: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool [B, Q, KV] -> additive float [B, 1, Q, KV]."""
    out = torch.zeros(ok.shape, dtype=dtype, device=ok.device)
    return out.masked_fill_(~ok, torch.finfo(dtype).min)[:, None]


def hpd_mask(
    position_ids: torch.Tensor, doc_ids: torch.Tensor, slot_ids: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """Full self-attention mask of a sequence ([B, T] each) -> [B, 1, T, T]; for training and prefill."""
    return additive(allowed(position_ids, doc_ids, slot_ids, position_ids, doc_ids, slot_ids), dtype)


def hpd_training_mask(
    position_ids: torch.Tensor,
    doc_ids: torch.Tensor,
    slot_ids: torch.Tensor,
    dtype: torch.dtype,
    window: int | None = None,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """hpd_mask, or with a sliding `window` one mask per layer type (per_layer)."""
    mask = hpd_mask(position_ids, doc_ids, slot_ids, dtype)
    return per_layer(mask, position_ids, position_ids, window)


def per_layer(
    mask: torch.Tensor, q_pos: torch.Tensor, kv_pos: torch.Tensor, window: int | None
) -> torch.Tensor | dict[str, torch.Tensor]:
    """mask [B, 1, Q, KV] as it is without a window, else one mask per layer type: the full layers'
    mask and the sliding layers' mask cut to keys less than `window` positions back. Positions
    restart per document, so the cut is what each document's own tokens would see laid out alone,
    as the model's sliding layers see a sequence (key index > query index - window).

    q_pos [B, Q]; kv_pos [B, KV'] with KV' <= KV: the positions of the first KV' keys, the only ones
    cut (the rest are a slot's own value tokens, nearer than any window: api.check_span)."""
    if window is None:
        return mask
    far = (q_pos[:, :, None] - kv_pos[:, None, :]) >= window  # [B, Q, KV']
    cut = mask.clone()
    cut[..., : kv_pos.shape[1]].masked_fill_(far[:, None], torch.finfo(mask.dtype).min)
    return {"full_attention": mask, "sliding_attention": cut}


def prefill_mask(
    q_pos: torch.Tensor,
    q_doc: torch.Tensor,
    kv_pos: torch.Tensor,
    kv_doc: torch.Tensor,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Prompt-only mask (every slot id is -1): q_* [B, Q], kv_* [B, KV] -> [B, 1, Q, KV]."""
    none = torch.full_like(q_pos, PROMPT_SLOT)
    return additive(allowed(q_pos, q_doc, none, kv_pos, kv_doc, torch.full_like(kv_pos, PROMPT_SLOT)), dtype)


def causal_mask(batch: int, q: int, kv: int, dtype: torch.dtype, device: torch.device | str) -> torch.Tensor:
    """Plain causal mask for q new tokens after kv - q cached ones -> [B, 1, q, kv]."""
    i = torch.arange(q, device=device)[:, None] + (kv - q)
    ok = torch.arange(kv, device=device)[None, :] <= i
    return additive(ok.expand(batch, q, kv), dtype)


def slot_prompt_mask(
    slot_pos: torch.Tensor,
    slot_doc: torch.Tensor,
    kv_pos: torch.Tensor,
    kv_doc: torch.Tensor,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Built once per batch. slot_*: [B, S] (position of the slot's last key token, its doc),
    kv_*: [B, KVp] prompt entries -> additive [B, S, KVp]: the prompt part of every slot's mask row."""
    return prefill_mask(slot_pos, slot_doc, kv_pos, kv_doc, dtype)[:, 0]


def step_mask(
    base: torch.Tensor, gen_slot: torch.Tensor, q_slot: torch.Tensor, q_valid: torch.Tensor
) -> torch.Tensor:
    """Extend the prompt rows to one decode step.

    base: [B, S, KVp] from slot_prompt_mask; gen_slot: [B, G] slot of each generated entry (the
    current step's tokens included, -2 for padding); q_slot: [B, Q] slot of each query (index into
    S); q_valid: [B, Q] False for padding queries -> additive [B, 1, Q, KVp + G].
    """
    rows = torch.gather(base, 1, q_slot[:, :, None].expand(-1, -1, base.shape[-1]))  # [B, Q, KVp]
    mine = (gen_slot[:, None, :] == q_slot[:, :, None]) & q_valid[:, :, None]  # [B, Q, G]
    gen = torch.zeros(mine.shape, dtype=base.dtype, device=base.device)
    gen.masked_fill_(~mine, torch.finfo(base.dtype).min)
    return torch.cat([rows, gen], dim=-1)[:, None]
