"""A mapping that forgets its least recently used entries once their summed sizes pass a budget.

A worker lives for days: without a bound, every schema's prefix cache (the engine) and every model
version it served (runner/decoding.py) would stay in its memory. Sizes are what the owner says
(bytes of tensors, or 1 per entry for a count). The entry stored last is always kept, even alone
over the budget: it is the one in use. Torch-free, so the worker's Django side may import it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


def one(_value) -> int:
    return 1


class BoundedLRU(Generic[V]):
    """key -> value, least recently used first; `budget` bounds the summed `size_of(value)`."""

    def __init__(self, budget: int, size_of: Callable[[V], int] = one):
        if budget < 0:
            raise ValueError(f"a cache budget cannot be negative ({budget})")
        self.budget = budget
        self._size_of = size_of
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self.total = 0  # summed sizes of the entries held

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list:
        """The keys held, least recently used first."""
        return list(self._entries)

    def newest_size(self) -> int:
        """The size of the most recently used entry (0 when empty)."""
        return self._entries[next(reversed(self._entries))][1] if self._entries else 0

    def get(self, key: Hashable) -> V | None:
        """The value (now the most recently used), or None when not held."""
        if key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key][0]

    def put(self, key: Hashable, value: V) -> list[tuple[Hashable, V]]:
        """Hold value as the most recently used -> the entries forgotten to stay within the budget,
        least recently used first (never this one)."""
        self.pop(key)
        size = self._size_of(value)
        evicted = self.make_room(size)
        self._entries[key] = (value, size)
        self.total += size
        return evicted

    def make_room(self, size: int) -> list[tuple[Hashable, V]]:
        """Forget the least recently used entries until `size` more fits the budget (a caller about
        to build a large value does so before building it, so both never sit in memory at once)."""
        evicted = []
        while self._entries and self.total + size > self.budget:
            key, (value, held) = self._entries.popitem(last=False)
            self.total -= held
            evicted.append((key, value))
        return evicted

    def pop(self, key: Hashable) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self.total -= entry[1]
        return entry[0]

    def clear(self) -> None:
        self._entries.clear()
        self.total = 0
