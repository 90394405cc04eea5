"""Block attention for HPD rows: each document of a stacked row gets its own block of keys, so
that no score between two stacked documents is ever computed.

A row's prompt entries are regrouped per document at prefill into one buffer per (row, document)
group, per layer: [rows x J, Hkv, P + Ld + G x Nd, D] =

    the shared prefix (P, copied in once per batch)
    the document's own prompt entries: its text and keys (Ld, padded to the longest)
    its slots' value tokens, one column per slot per step (Nd slots, up to G steps)

The model sees no padding: a forward's tokens are packed into one sequence [1, N] (the real prompt
tokens at prefill, the open slots' tokens at a step), since every layer but attention treats
tokens one by one; attention regroups them. Each forward groups its queries per document, and a
query attends to its group's buffer under a mask that keeps the prefix, its document up to its
key, and its own slot's tokens so far (the three-part mask of HPD.md, restricted to one document).
A sliding-window layer (its attention is called with sliding_window, as Gemma 3's five of six are)
also hides the prompt entries `window` or more positions behind the query, as it would see the
document laid out alone; a slot's own value tokens are always nearer than that (api.check_span).
The dense path (dense_attention.py: one cache per row, masks.py's mask) scores every query
against every entry of its row: at J stacked documents a step's attention costs about J times
what the mask lets through. Here neither stacking nor padding taxes the forward, so the layout
sweep chooses J and rows on what is left (rows leaving the decode, batch sizes).

Wiring: a forward runs with the config's attention implementation switched to BLOCKS (registered
in transformers' AttentionInterface) and the plan passed as a keyword argument, which
transformers hands down to every layer's attention function; the model's own cache is not used.
A model whose layers do not call the interface is caught by counting the calls (NotDispatched),
and hpd.prefill_rows serves it with dense rows.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from extraction.engine.layout import PAD

BLOCKS = "slotwise_blocks"
PLAN_KWARG = "slotwise_plan"


def _attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The registered attention function: the plan's blocks when a plan is passed, else sdpa."""
    plan = kwargs.pop(PLAN_KWARG, None)
    if plan is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)
    return plan.attend(module.layer_idx, query, key, value, scaling, kwargs.get("sliding_window")), None


AttentionInterface.register(BLOCKS, _attention)


def additive(ok: torch.Tensor, dtype) -> torch.Tensor:
    return torch.zeros(ok.shape, dtype=dtype, device=ok.device).masked_fill_(~ok, torch.finfo(dtype).min)


class BlockPlan:
    """The block layout of one batch of HPD rows and every layer's group buffers.

    Index and mask tensors are built once per forward (begin_step; the prefill's at __init__),
    not per layer. prefix_cache: the schema's prefix cache (batch 1). doc_ids, position_ids:
    [B, L] of the rows' prompt tokens (PAD: padding); slot_doc [B, S] (PAD: no slot), slot_pos
    [B, S] (position of each slot's last key token), max_gap: the longest gap G."""

    def __init__(self, prefix_cache, doc_ids, position_ids, slot_doc, slot_pos, max_gap: int):
        self.prefix = [(layer.keys, layer.values) for layer in prefix_cache.layers]
        self.P = self.prefix[0][0].shape[2] if self.prefix else 0
        B, L = doc_ids.shape
        device = doc_ids.device
        self.J, self.G = max(int(doc_ids.max()) + 1, 1), max_gap
        docs = torch.arange(self.J, device=device)
        mine = doc_ids[:, :, None] == docs  # [B, L, J]
        rank = (mine.cumsum(1) - 1).gather(2, doc_ids.clamp(min=0)[:, :, None])[:, :, 0]  # [B, L]
        self.Ld = max(int(mine.sum(1).max()), 1)
        real = doc_ids != PAD
        rows = torch.arange(B, device=device)[:, None]
        # where each real prompt token (packed order: row-major) sits in the grouped layout [B*J*Ld]
        self.to_group = ((rows * self.J + doc_ids.clamp(min=0)) * self.Ld + rank)[real]
        self.B = B
        group_pos = torch.full((B * self.J * self.Ld,), -1, dtype=torch.long, device=device)
        group_pos[self.to_group] = position_ids[real]
        pos = group_pos.view(B * self.J, self.Ld)  # -1: empty place
        self.group_pos = pos
        doc_sees = (pos[:, None, :] >= 0) & (pos[:, None, :] <= pos[:, :, None])  # [B*J, Ld, Ld]
        prefix = torch.ones((B * self.J * self.Ld, self.P), dtype=torch.bool, device=device)
        self.prefill = {
            "sees": torch.cat([prefix, doc_sees.reshape(-1, self.Ld)], 1),
            # every query place, its position and group (for a sliding layer's cut: _windowed)
            "at": torch.arange(B * self.J * self.Ld, device=device),
            "q_pos": pos.reshape(-1),
            "group": torch.arange(B * self.J, device=device).repeat_interleave(self.Ld),
        }
        # each slot: its group, its place among its document's slots, the prompt entries it sees
        has = slot_doc != PAD
        self.slot_group = rows * self.J + slot_doc.clamp(min=0)  # [B, S]
        of_doc = (slot_doc[:, :, None] == docs) & has[:, :, None]  # [B, S, J]
        self.slot_local = (of_doc.cumsum(1) - 1).gather(2, slot_doc.clamp(min=0)[:, :, None])[:, :, 0]
        self.Nd = max(int(of_doc.sum(1).max()), 1)
        gp = pos[self.slot_group]  # [B, S, Ld]
        self.slot_sees = (gp >= 0) & (gp <= slot_pos[:, :, None]) & has[:, :, None]
        self.buffers: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.zeroed: list[int] = []  # per layer: buffer columns holding finite numbers
        self.step: dict | None = None  # a decode step's indices and mask (begin_step); None: prefill
        self.calls = 0

    # ------------------------------------------------------------------ per forward

    def begin_step(
        self, order: torch.Tensor, valid: torch.Tensor, fed: torch.Tensor, position: torch.Tensor
    ) -> None:
        """The next forward is a decode step: query k of row b is slot order[b, k] (valid[b, k]),
        writing its value token number fed[b, k] at position[b, k]. Builds what every layer's step
        shares."""
        B, Q = order.shape
        device = order.device
        rows = torch.arange(B, device=device)[:, None].expand(B, Q)
        group = torch.gather(self.slot_group, 1, order)  # [B, Q]
        local = torch.gather(self.slot_local, 1, order)
        # each query's rank among the valid queries of its group -> its place in [groups, Qd]
        same = (group[:, :, None] == group[:, None, :]) & valid[:, None, :]  # [B, Q, Q]
        rank = torch.tril(same.to(torch.int32)).sum(2) - 1
        Qd = max(int(rank.max()) + 1, 1)
        picked = valid.reshape(-1).nonzero().squeeze(1)  # valid queries in [B*Q], the packed order
        g = group.reshape(-1)[picked]
        # a slot open at a step has been fed at every step before it: its token number fed goes
        # to the column of step fed, so the columns in use grow with the steps (time-major)
        f, lo = fed.reshape(-1)[picked], local.reshape(-1)[picked]
        T = int(f.max()) + 1 if len(picked) else 1
        first = self.P + self.Ld  # the first value column
        K = first + T * self.Nd
        sees = torch.zeros((B * self.J * Qd, K), dtype=torch.bool, device=device)
        at = g * Qd + rank.reshape(-1)[picked]  # each query's place in [groups, Qd]
        sees[:, : self.P] = True
        sees[at, self.P : first] = self.slot_sees[rows, order].reshape(B * Q, self.Ld)[picked]
        steps = torch.arange(T, device=device)
        sees[at[:, None], first + steps * self.Nd + lo[:, None]] = steps <= f[:, None]
        self.step = {
            "at": at,
            "Qd": Qd,
            "K": K,
            "write": (g, first + f * self.Nd + lo),
            "sees": sees,
            "q_pos": position.reshape(-1)[picked],
            "group": g,
        }

    def attend(self, layer: int, q, k, v, scale: float | None, window: int | None = None) -> torch.Tensor:
        """q [1, H, N, D], k / v [1, Hkv, N, D] of this forward's packed tokens -> attention output
        [1, N, H, D]. window: the layer's sliding window (None: it sees its whole sequence)."""
        self.calls += 1
        if self.step is None:
            return self._prefill(layer, q, k, v, scale, self._windowed(self.prefill, window))
        return self._decode(layer, q, k, v, scale, self._windowed(self.step, window))

    def _windowed(self, holder: dict, window: int | None) -> dict:
        """The forward's mask holder as a sliding layer sees it: the prompt columns (prefix and
        document) `window` or more positions behind a query hidden too. Built by the first sliding
        layer of a forward and kept for the others, as the mask is."""
        if window is None:
            return holder
        if window not in holder:
            at, group = holder["at"], holder["group"]
            cols = torch.cat(
                [torch.arange(self.P, device=at.device).expand(len(at), self.P), self.group_pos[group]], 1
            )  # [queries, P + Ld] the prompt columns' positions (-1: empty place, unseen anyway)
            sees = holder["sees"].clone()
            sees[at, : self.P + self.Ld] &= (holder["q_pos"][:, None] - cols) < window
            holder[window] = {"sees": sees}
        return holder[window]

    def _group(self, x: torch.Tensor) -> torch.Tensor:
        """Packed prompt tokens [1, h, N, D] -> grouped per document [B*J, h, Ld, D] (empty places
        zero)."""
        _, h, N, D = x.shape
        out = x.new_zeros((self.B * self.J * self.Ld, h, D))
        out[self.to_group] = x[0].transpose(0, 1)
        return out.view(self.B * self.J, self.Ld, h, D).transpose(1, 2)

    def _attend(self, holder: dict, qg, buf_k, buf_v, K: int, m: int, scale):
        """Grouped queries [n*m, H, D] (m per group) against the first K columns of the group
        buffers, under holder["sees"] [n*m, K] -> [n*m, H, D]. A kv head's query heads are folded
        into its query axis (grouped-query attention without repeating keys); the additive mask
        is built by the first layer of a forward and kept in holder for the others."""
        n, hkv, _, D = buf_k.shape
        H = qg.shape[1]
        grp = H // hkv
        if "mask" not in holder:
            mask = additive(holder["sees"].view(n, 1, 1, m, K), qg.dtype).expand(-1, -1, grp, -1, -1)
            holder["mask"] = mask.reshape(n, 1, grp * m, K)
        q = qg.view(n, m, hkv, grp, D).permute(0, 2, 3, 1, 4).reshape(n, hkv, grp * m, D)
        out = F.scaled_dot_product_attention(
            q, buf_k[:, :, :K], buf_v[:, :, :K], attn_mask=holder["mask"], scale=scale
        )
        return out.view(n, hkv, grp, m, D).permute(0, 3, 1, 2, 4).reshape(n * m, H, D)

    def _prefill(self, layer: int, q, k, v, scale, holder: dict):
        _, H, N, D = q.shape
        n, hkv, P, Ld = self.B * self.J, k.shape[1], self.P, self.Ld
        # value columns are zeroed step by step as they come into use (_decode): masked entries
        # must hold finite numbers, and zeroing the whole buffer up front costs more
        buf_k = k.new_empty((n, hkv, P + Ld + self.Nd * self.G, D))
        buf_v = torch.empty_like(buf_k)
        pk, pv = self.prefix[layer]
        buf_k[:, :, :P], buf_v[:, :, :P] = pk, pv
        buf_k[:, :, P : P + Ld], buf_v[:, :, P : P + Ld] = self._group(k), self._group(v)
        self.buffers.append((buf_k, buf_v))
        self.zeroed.append(P + Ld)
        qg = self._group(q).transpose(1, 2).reshape(n * Ld, H, D)
        out = self._attend(holder, qg, buf_k, buf_v, P + Ld, Ld, scale)
        return out[self.to_group].view(1, N, H, D)

    def _decode(self, layer: int, q, k, v, scale, holder: dict):
        st = self.step
        _, H, N, D = q.shape
        buf_k, buf_v = self.buffers[layer]
        K, Qd = st["K"], st["Qd"]
        if self.zeroed[layer] < K:
            buf_k[:, :, self.zeroed[layer] : K] = 0
            buf_v[:, :, self.zeroed[layer] : K] = 0
            self.zeroed[layer] = K
        g, t = st["write"]
        buf_k[g, :, t] = k[0].transpose(0, 1)
        buf_v[g, :, t] = v[0].transpose(0, 1)
        qg = q.new_zeros((buf_k.shape[0] * Qd, H, D))
        qg[st["at"]] = q[0].transpose(0, 1)
        out = self._attend(holder, qg, buf_k, buf_v, K, Qd, scale)
        return out[st["at"]].view(1, N, H, D)

    # ------------------------------------------------------------------ rows leaving

    def select_rows(self, keep: torch.Tensor) -> None:
        """Keep only these batch rows (finished rows leave the decode)."""
        groups = (keep[:, None] * self.J + torch.arange(self.J, device=keep.device)).view(-1)
        self.buffers = [(k.index_select(0, groups), v.index_select(0, groups)) for k, v in self.buffers]
        self.slot_sees, self.slot_local = self.slot_sees[keep], self.slot_local[keep]
        self.group_pos = self.group_pos.index_select(0, groups)
        # groups are numbered by row: renumber the kept rows' groups from 0
        kept = torch.arange(len(keep), device=keep.device)[:, None]
        self.slot_group = self.slot_group[keep] % self.J + kept * self.J


@contextlib.contextmanager
def blocks_enabled(model):
    """The model's layers call the block attention function for the forwards inside."""
    config = model.config
    saved = config._attn_implementation
    config._attn_implementation = BLOCKS
    try:
        yield
    finally:
        config._attn_implementation = saved


def forward(model, input_ids, position_ids, plan: BlockPlan) -> torch.Tensor:
    """One forward of packed tokens ([1, N] ids and positions) under the plan -> last hidden
    states [N, D]."""
    B, Q = input_ids.shape
    calls = plan.calls
    # a 4D mask is passed through as it is (no mask is built); the blocks mask themselves
    mask = torch.zeros((B, 1, Q, 1), dtype=model.dtype, device=input_ids.device)
    with blocks_enabled(model):
        out = model.base_model(
            input_ids=input_ids,
            position_ids=position_ids,
            attention_mask=mask,
            use_cache=False,
            **{PLAN_KWARG: plan},
        )
    if plan.calls - calls != len(plan.prefix):
        raise NotDispatched(
            f"{type(model).__name__}: {plan.calls - calls} of {len(plan.prefix)} layers used block attention"
        )
    return out.last_hidden_state[0]


class NotDispatched(RuntimeError):
    """The model's layers do not all call transformers' attention interface."""


class BlockRows:
    """HPD rows decoded under block attention (the counterpart of dense_attention.DenseRows)."""

    def __init__(self, prefix_cache, rows, max_gap: int):
        self.plan = BlockPlan(
            prefix_cache, rows.doc_ids, rows.position_ids, rows.slot_doc, rows.slot_start - 1, max_gap
        )

    def prefill(self, model, rows) -> torch.Tensor:
        """-> hidden states [B, L, D] of the rows' prompt tokens (zeros at padding)."""
        real = rows.doc_ids != PAD
        hidden = forward(model, rows.input_ids[real][None], rows.position_ids[real][None], self.plan)
        out = hidden.new_zeros((*rows.input_ids.shape, hidden.shape[-1]))
        out[real] = hidden
        return out

    def step(self, model, ids, pos, order, valid, fed) -> torch.Tensor:
        """-> hidden states [N, D] of the valid queries, row-major."""
        self.plan.begin_step(order, valid, fed, pos)
        return forward(model, ids[valid][None], pos[valid][None], self.plan)

    def select_rows(self, keep: torch.Tensor) -> None:
        self.plan.select_rows(keep)
