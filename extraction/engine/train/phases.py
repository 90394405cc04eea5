"""Where a training step's time goes: named phases timed while a PhaseClock records, free otherwise.

The trainer marks its phases (`with phase("backward"): ...`); nothing is timed unless a caller
records, as the training speed bench does (tools/bench/train_speed.py):

    clock = PhaseClock()
    with clock.recording():
        train_step(...)
    clock.seconds  # {"backward": 12.3, ...}

A phase inside another is named "outer/inner" by whoever marks it, so a table can show both.
The clock is a context variable rather than an argument: the phases sit in functions several calls
deep (the mask inside the forward, the attention inside the model), and timing must not change any
of their signatures.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from contextvars import ContextVar

_clock: ContextVar[PhaseClock | None] = ContextVar("slotwise_phase_clock", default=None)


class PhaseClock:
    """Seconds per phase name, summed over every time the phase ran while recording."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def recording(self):
        token = _clock.set(self)
        try:
            yield self
        finally:
            _clock.reset(token)


def recording_clock() -> PhaseClock | None:
    """The clock recording now, if any (for hooks that time a phase across two calls)."""
    return _clock.get()


@contextlib.contextmanager
def phase(name: str):
    """Time the block as phase `name` when a clock records (CPU work is synchronous, so wall time is
    the phase's time; on CUDA it would be the launch time only)."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        clock.seconds[name] += time.perf_counter() - start
