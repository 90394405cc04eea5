"""How many products a worker leases at once: as many as their decoding fits its memory budget.

A batch is sized by its tokens, not by a product count: the worker estimates the memory of decoding
the products it would lease from their prompt positions and the stacking (DecodeMemory) and leases
them, in order, while the estimate fits settings.EXTRACTION_MEMORY_BUDGET_MB (runner/leases.py). A
product too long to share a batch is leased alone, and the engine decodes a batch of one unstacked.

The engine decodes a batch one forward at a time, each of at most DOCUMENTS_PER_FORWARD documents
stacked to rows, so the peak is its largest forward: the documents' key-value cache and one layer's
activations grow with their positions, one row's attention scores with the square of the row's
length (long documents stacked together are what exhausted a worker's memory). The coefficients stay
above what the default model (Gemma 3 270M, float32, CPU) took in peak resident memory for one to four
documents of 770 to 6,600 positions.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from extraction.engine.api import DOCUMENTS_PER_FORWARD, LAYOUT_CANDIDATES, PROBE_DOCUMENTS
from runner import decoding

WIDEST_STACK = max(stack for stack, _ in LAYOUT_CANDIDATES)
SCORE_BYTES = 4  # attention scores are computed in float32 whatever the weights' precision
MB = 2**20


@dataclass(frozen=True)
class DecodeMemory:
    """Bytes per prompt position of a forward, and per (query, key) pair of one stacked row."""

    per_position: int
    per_pair: int

    @classmethod
    def of(cls, config, dtype_bytes: int) -> "DecodeMemory":
        heads = config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        intermediate = getattr(config, "intermediate_size", None) or 4 * config.hidden_size
        kv_cache = 2 * config.num_hidden_layers * kv_heads * head_dim * dtype_bytes
        activations = (16 * config.hidden_size + 8 * intermediate) * dtype_bytes
        return cls(per_position=kv_cache + activations, per_pair=2 * heads * SCORE_BYTES)  # scores, softmax

    def batch_bytes(self, positions: list[int], stack: int) -> int:
        """The largest forward of documents of these prompt positions, `stack` to a row: the longest
        ones share a forward and a row (the engine sorts documents by length)."""
        longest = sorted(positions, reverse=True)[:DOCUMENTS_PER_FORWARD]
        if not longest:
            return 0
        stack = max(1, min(stack, len(longest)))
        rows = -(-len(longest) // stack)
        row = stack * longest[0]
        return sum(longest) * self.per_position + rows * row * row * self.per_pair


def widest_stack(decoder: str, stack: int | None, documents: int) -> int:
    """The most documents one row may stack: the run's stack, else the engine's widest choice where
    it chooses by measurement (from PROBE_DOCUMENTS documents on; fewer decode one to a row). AR and
    the fork baseline decode one document a row."""
    if decoder not in ("hpd", "hpd-dense"):
        return 1
    if stack:
        return stack
    return WIDEST_STACK if documents >= PROBE_DOCUMENTS else 1


class BatchBudget:
    """Whether a batch of leased-to-be work items fits the worker's memory budget (lease_batch's `fits`).

    specs(schema_id) gives the engine's attribute specs of a schema version (the loop's cache)."""

    def __init__(self, extractor, specs: Callable[[int], list], decoder: str, stack: int | None):
        self.extractor, self.specs, self.decoder, self.stack = extractor, specs, decoder, stack
        dtype_bytes = getattr(extractor.torch_dtype, "itemsize", 4)
        self.memory = DecodeMemory.of(extractor.model.config, dtype_bytes)
        self.budget_bytes = settings.EXTRACTION_MEMORY_BUDGET_MB * MB
        self._positions: dict[int, int] = {}  # work item id -> its prompt positions

    def positions(self, item) -> int:
        """The prompt positions of a work item's product (counted once per item)."""
        if item.id not in self._positions:
            text = item.product.document
            self._positions[item.id] = decoding.prompt_positions(
                self.extractor, self.specs(item.schema_id), text
            )
        return self._positions[item.id]

    def batch_bytes(self, items: list) -> int:
        stack = widest_stack(self.decoder, self.stack, len(items))
        return self.memory.batch_bytes([self.positions(item) for item in items], stack)

    def fits(self, items: list) -> bool:
        return self.batch_bytes(items) <= self.budget_bytes
