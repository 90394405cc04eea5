"""Keep training's resident memory flat on glibc.

Training batches change shape every step (packed rows of varying documents), so PyTorch's CPU
tensors are freed and reallocated at ever new sizes. glibc raises its mmap threshold each time a
large mmapped block is freed (up to 32 MB), after which such blocks come from the heap, where
fragments of different sizes pile up and are never returned: stage 1 of the SmolLM2 fine-tune grew
from 10 GB to 20 GB resident in 80 minutes. A fixed threshold keeps large tensors in mmap (returned
to the system on free) and a low trim threshold returns freed heap tops; with them stage 2 stayed
flat. The same can be had with MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072 in the
environment; doing it here means every training run gets it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
FIXED_THRESHOLD = 128 * 1024  # glibc's initial default, kept fixed instead of growing


def limit_fragmentation() -> bool:
    """Fix glibc's mmap and trim thresholds; False (and nothing changed) where libc is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        log.info("not glibc: allocator thresholds left as they are")
        return False
    ok = bool(mallopt(M_MMAP_THRESHOLD, FIXED_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, FIXED_THRESHOLD))
    return ok
