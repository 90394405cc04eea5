"""Training attention by document: each document of a packed row attends to the row's prefix and
to itself only, so no score between two documents of a row is ever computed.

The dense training mask (decode/masks.hpd_training_mask) scores every query of a row against every
key of the row ([B, H, T, T]) and then hides all but its own document's and the prefix's: with
4-8 documents in a 1,024-token row, most of the attention's multiply-adds are thrown away. Here a
batch's tokens are regrouped once per forward into groups (row b, document j; the prefix a group of
its own): queries [G, Lq] are the group's tokens, keys [G, Lk] the row's prefix then the group's
tokens, and each group attends under the three-part HPD mask restricted to it (masks.allowed), cut
to the window on a sliding layer exactly as masks.per_layer cuts the dense one. Padding tokens
(doc id PAD) belong to no group; their output is zero (the dense mask gives them finite
noise; neither carries a loss nor is seen by anyone).

Wiring: the decoding's block attention function (decode/block_attention.py) is registered in
transformers' AttentionInterface and hands every layer's q, k, v to the plan passed as a keyword
argument; a DocBlocks plan answers them for training.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from extraction.engine.decode import block_attention as blocks
from extraction.engine.decode.masks import additive, allowed
from extraction.engine.layout import PAD, PROMPT_DOC
from extraction.engine.train.phases import phase


def group_index(doc_ids: torch.Tensor, members: torch.Tensor) -> tuple[torch.Tensor, int]:
    """members [G, B*T] bool (token n belongs to group g) -> (index [G, L] of each group's tokens in
    memory order, padded with B*T, the index of an empty place; L the largest group)."""
    count = members.sum(1)
    width = max(int(count.max()), 1)
    rank = members.cumsum(1) - 1  # each member's place in its group
    index = torch.full((members.shape[0], width), doc_ids.numel(), dtype=torch.long, device=doc_ids.device)
    g, n = members.nonzero(as_tuple=True)
    index[g, rank[g, n]] = n
    return index, width


class DocBlocks:
    """The document groups of one training batch ([B, T] position, doc and slot ids), built once per
    forward and shared by every layer; attend() is what block_attention's function calls."""

    def __init__(self, position_ids: torch.Tensor, doc_ids: torch.Tensor, slot_ids: torch.Tensor):
        B, T = doc_ids.shape
        device = doc_ids.device
        docs = torch.arange(-1, max(int(doc_ids.max()) + 1, 0), device=device)  # the prefix, then 0..J-1
        row = torch.arange(B, device=device).repeat_interleave(T)  # [B*T]
        doc = doc_ids.reshape(-1)
        group_row = torch.arange(B, device=device).repeat_interleave(len(docs))  # [G]
        group_doc = docs.repeat(B)
        same_row = row[None, :] == group_row[:, None]  # [G, B*T]
        self.q_index, _ = group_index(doc_ids, same_row & (doc[None, :] == group_doc[:, None]))
        is_key = (doc[None, :] == PROMPT_DOC) | (doc[None, :] == group_doc[:, None])
        self.k_index, _ = group_index(doc_ids, same_row & is_key)
        self.positions = self._gathered(position_ids.reshape(-1), -1)
        self.q_pos, self.k_pos = self.positions[self.q_index], self.positions[self.k_index]
        ids = self._gathered(doc, PAD), self._gathered(slot_ids.reshape(-1), PAD)
        q_doc, q_slot = ids[0][self.q_index], ids[1][self.q_index]
        k_doc, k_slot = ids[0][self.k_index], ids[1][self.k_index]
        real = (q_doc != PAD)[:, :, None] & (k_doc != PAD)[:, None, :]
        self.sees = allowed(self.q_pos, q_doc, q_slot, self.k_pos, k_doc, k_slot) & real  # [G, Lq, Lk]
        # each token's place in the grouped queries [G*Lq]; padding: the zero row appended after them
        self.back = torch.full((B * T,), self.q_index.numel(), dtype=torch.long, device=device)
        flat = self.q_index.reshape(-1)
        used = flat < B * T
        self.back[flat[used]] = torch.arange(flat.numel(), device=device)[used]
        self.masks: dict[tuple[int | None, torch.dtype, int], torch.Tensor] = {}
        self.calls = 0

    @staticmethod
    def _gathered(values: torch.Tensor, fill: int) -> torch.Tensor:
        """values [B*T] with `fill` appended at index B*T (the empty place of the group indices)."""
        return torch.cat([values, values.new_full((1,), fill)])

    def mask(self, window: int | None, dtype: torch.dtype, heads: int = 1) -> torch.Tensor:
        """The additive mask [G, 1, heads * Lq, Lk] of a layer with this sliding window (None: full),
        repeated for `heads` query heads folded into the query axis; built once per forward and
        shared by the layers. A row that sees nothing (an empty place) stays finite, as the dense
        mask's padding rows do."""
        key = (window, dtype, heads)
        if key not in self.masks:
            sees = self.sees
            if window is not None:
                sees = sees & ((self.q_pos[:, :, None] - self.k_pos[:, None, :]) < window)
            G, Lq, Lk = sees.shape
            mask = additive(sees, dtype)  # [G, 1, Lq, Lk]
            self.masks[key] = mask[:, :, None].expand(-1, -1, heads, -1, -1).reshape(G, 1, heads * Lq, Lk)
        return self.masks[key]

    def attend(self, layer: int, q, k, v, scale: float | None, window: int | None = None) -> torch.Tensor:
        """q [B, H, T, D], k / v [B, Hkv, T, D] -> attention output [B, T, H, D]."""
        self.calls += 1
        B, H, T, D = q.shape
        hkv = k.shape[1]
        grp = H // hkv
        G, Lq = self.q_index.shape
        qg = _grouped(q, self.q_index)  # [G, Lq, H, D]
        kg, vg = _grouped(k, self.k_index), _grouped(v, self.k_index)  # [G, Lk, Hkv, D]
        # a kv head's query heads folded into its query axis (grouped-query attention, no repeat)
        qf = qg.view(G, Lq, hkv, grp, D).permute(0, 2, 3, 1, 4).reshape(G, hkv, grp * Lq, D)
        mask = self.mask(window, q.dtype, grp)
        out = F.scaled_dot_product_attention(
            qf, kg.transpose(1, 2), vg.transpose(1, 2), attn_mask=mask, scale=scale
        )
        out = out.view(G, hkv, grp, Lq, D).permute(0, 3, 1, 2, 4).reshape(G * Lq, H, D)
        out = torch.cat([out, out.new_zeros((1, H, D))])
        return out.index_select(0, self.back).view(B, T, H, D)


def _grouped(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x [B, h, T, D] -> [G, L, h, D] at index [G, L] into its B*T tokens (B*T: a zero row)."""
    B, h, T, D = x.shape
    flat = x.transpose(1, 2).reshape(B * T, h, D)
    flat = torch.cat([flat, flat.new_zeros((1, h, D))])
    return flat.index_select(0, index.reshape(-1)).view(*index.shape, h, D)


def blocked_hidden(lm, b: dict[str, torch.Tensor]) -> torch.Tensor:
    """The training forward of the causal LM `lm` under document blocks -> last hidden states
    [B, T, H]. b: the batch's input_ids, position_ids, doc_ids, slot_ids on the model's device."""
    with phase("forward: HPD mask"):
        plan = DocBlocks(b["position_ids"], b["doc_ids"], b["slot_ids"])
    B, T = b["input_ids"].shape
    # a 4D mask is passed through as it is (no mask is built); the blocks mask themselves
    mask = torch.zeros((B, 1, T, 1), dtype=lm.dtype, device=b["input_ids"].device)
    with blocks.blocks_enabled(lm), phase("forward: body"):
        out = lm.base_model(
            input_ids=b["input_ids"],
            position_ids=b["position_ids"],
            attention_mask=mask,
            use_cache=False,
            **{blocks.PLAN_KWARG: plan},
        )
    layers = lm.config.num_hidden_layers
    if plan.calls != layers:
        raise blocks.NotDispatched(
            f"{type(lm).__name__}: {plan.calls} of {layers} layers used block attention"
        )
    return out.last_hidden_state
