"""Stopping a decode between forward steps, for a caller that no longer wants its result.

A cancelled run must not go on decoding its batch for minutes. The caller hands in `should_stop`
(a cheap callable; the worker's asks PostgreSQL at most every second or so); it is checked before
every forward of the model's base, the one call every decoder makes per step (HPD's prefill and
steps, AR's generate, the baselines'), and raises Cancelled when it answers True. Nothing in the
decoding changes otherwise: a hook that never fires leaves every value as it was.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager


class Cancelled(Exception):
    """The caller asked to stop; nothing of the batch was decoded."""


@contextmanager
def stop_between_forwards(model, should_stop: Callable[[], bool] | None) -> Iterator[None]:
    """Within the block, every forward of `model`'s base first asks `should_stop`."""
    if should_stop is None:
        yield
        return

    def check(*_):
        if should_stop():
            raise Cancelled("stopped between forward steps: the caller cancelled the batch")

    handle = model.base_model.register_forward_pre_hook(check)
    try:
        yield
    finally:
        handle.remove()
