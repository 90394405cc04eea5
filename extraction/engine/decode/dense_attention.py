"""Dense attention for HPD rows: one cache per row (the prefix copied into every row, then the
row's prompt, then each step's tokens appended) and masks.py's three-part mask over all of it.
Every entry of a row is scored and most are masked; block_attention.py computes only what the
mask lets through. Kept as the reference the block path is tested against, and for models whose
layers do not dispatch through transformers' attention interface.

Cache: append-only. Memory order != position order: the step's tokens are appended at the end of
the cache but carry positions inside their slot's gap. Beside the cache travel kv_pos / kv_doc
(prompt entries) and gen_slot (generated entries), from which masks.py derives the mask. A model
whose sliding layers the masks cut (modeling.cut_window) gets one mask per layer type (masks.per_layer).
"""

from __future__ import annotations

import torch

from extraction.engine.decode import masks
from extraction.engine.layout import PAD, PROMPT_DOC
from extraction.engine.modeling import cut_window, expand_cache, forward_hidden


class DenseRows:
    def __init__(self, prefix_cache, rows, max_gap: int):
        self.prefix_cache, self.max_gap = prefix_cache, max_gap
        self.cache = None
        self.base = None  # [B', S, P+L] the prompt part of every slot's mask row
        self.gen_slot = None  # [B', G] slot of each generated cache entry (PAD: padding query)
        self.kv_pos = None  # [B', P+L] positions of the prompt entries (a sliding layer's cut)
        self.window = None

    def prefill(self, model, rows) -> torch.Tensor:
        device, dtype = rows.input_ids.device, model.dtype
        B, L = rows.input_ids.shape
        S = rows.slot_index.shape[1]
        P = self.prefix_cache.get_seq_length()
        # metadata of the prompt entries: prefix then the rows' own tokens
        kv_pos = torch.cat([torch.arange(P, device=device)[None].expand(B, P), rows.position_ids], 1)
        kv_doc = torch.cat([torch.full((B, P), PROMPT_DOC, device=device), rows.doc_ids], 1)
        # every step appends <= S entries
        self.cache = expand_cache(self.prefix_cache, B, capacity=P + L + S * self.max_gap)
        self.kv_pos, self.window = kv_pos, cut_window(model.config)
        mask = masks.prefill_mask(rows.position_ids, rows.doc_ids, kv_pos, kv_doc, dtype)  # [B, 1, L, P+L]
        mask = masks.per_layer(mask, rows.position_ids, kv_pos, self.window)
        hidden = forward_hidden(model, rows.input_ids, rows.position_ids, mask, self.cache)
        # the prompt part of every slot's mask row (slot_start - 1: its key's last token), built
        # once; generated entries extend it per step
        self.base = masks.slot_prompt_mask(rows.slot_start - 1, rows.slot_doc, kv_pos, kv_doc, dtype)
        self.gen_slot = torch.empty((B, 0), dtype=torch.long, device=device)
        return hidden

    def step(self, model, ids, pos, order, valid, fed) -> torch.Tensor:
        self.gen_slot = torch.cat([self.gen_slot, torch.where(valid, order, PAD)], 1)  # [B', G+Q]
        mask = masks.step_mask(self.base, self.gen_slot, order, valid)  # [B', 1, Q, P+L+G+Q]
        mask = masks.per_layer(mask, pos, self.kv_pos, self.window)
        return forward_hidden(model, ids, pos, mask, self.cache)[valid]  # [N, D] valid queries, row-major

    def select_rows(self, keep: torch.Tensor) -> None:
        for layer in self.cache.layers:
            layer.select_rows(keep)
        self.base, self.gen_slot, self.kv_pos = self.base[keep], self.gen_slot[keep], self.kv_pos[keep]
