"""Keep training's resident memory flat, and training fast, whatever the allocator.

Training batches change shape every step (packed rows of varying documents), so PyTorch's CPU
tensors are freed and reallocated at ever new sizes. glibc raises its mmap threshold each time a
large mmapped block is freed (up to 32 MB), after which such blocks come from the heap, where
fragments of different sizes pile up and are never returned: stage 1 of the SmolLM2 fine-tune grew
from 10 GB to 20 GB resident in 80 minutes. A fixed threshold keeps large tensors in mmap (returned
to the system on free) and a low trim threshold returns freed heap tops; with them stage 2 stayed
flat, but every big tensor then costs fresh zeroed pages: 31% of the process's CPU time went to
the kernel (stage 2, sampled from /proc). jemalloc keeps freed pages for reuse by size class, so
memory stays flat (2.5-7 GB over 80 minutes at 4,096-token batches) with 12% in the kernel. So the
train command runs under jemalloc when the system has it (Debian: `apt install libjemalloc2`), and
falls back to the fixed glibc thresholds otherwise.

Training's pages between steps (issue #46, not settled): jemalloc serves blocks over 8 MB (every
large tensor) from its own arena, which returns freed pages at once whatever the decay, so the
faster recipe, whose steps take 10-20 s, faults its working set in again every step (55 million
minor faults, 24% of its CPU time in the kernel over 8 steps). With no decay at all
(`dirty_decay_ms:-1,muzzy_decay_ms:-1`) a 40-minute run made 229 tokens/s instead of 150, with 2%
in the kernel; but the old recipe's varying shapes then piled up past a 24 GB host's memory (the
speed bench, both recipes in one process, was killed at 23.7 GB), so the default stays until a
setting is shown to keep pages without that growth (`oversize_threshold:0` with a decay longer than
a step is the next to measure). MALLOC_CONF, when set, is used instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
FIXED_THRESHOLD = 128 * 1024  # glibc's initial default, kept fixed instead of growing
JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")  # Debian / Ubuntu's libjemalloc2
# return freed pages to the system after 10 s unused (jemalloc's own default), in a background thread
JEMALLOC_CONF = "background_thread:true,dirty_decay_ms:10000,muzzy_decay_ms:10000"
OPT_OUT = "SLOTWISE_NO_JEMALLOC"  # set to 1 to train on the default allocator
ALL_ARENAS = 4096  # jemalloc's MALLCTL_ARENAS_ALL: "arena.4096.purge" purges every arena


def under_jemalloc() -> bool:
    return "jemalloc" in os.environ.get("LD_PRELOAD", "")


def jemalloc_command(
    argv: list[str], library: Path = JEMALLOC, module: str = "extraction"
) -> tuple[str, list[str], dict] | None:
    """(executable, arguments, environment) that run `python -m MODULE ARGV` with jemalloc
    preloaded, or None when it is loaded already, opted out of, or not installed."""
    if under_jemalloc() or os.environ.get(OPT_OUT) == "1" or not Path(library).is_file():
        return None
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(p for p in (str(library), env.get("LD_PRELOAD", "")) if p)
    env.setdefault("MALLOC_CONF", JEMALLOC_CONF)
    return sys.executable, [sys.executable, "-m", module, *argv], env


def run_under_jemalloc(module: str = "extraction") -> None:
    """Re-execute this shell command (`python -m MODULE ...`: the train command, the training speed
    bench) under jemalloc when jemalloc_command says so; return otherwise. It replaces the process:
    not for library use."""
    command = jemalloc_command(sys.argv[1:], module=module)
    if command is None:
        if not under_jemalloc():  # the re-executed process lands here too, under jemalloc
            log.info("training on the default allocator (install libjemalloc2 for faster training)")
        return
    os.execve(*command)


def limit_fragmentation() -> bool:
    """Fix glibc's mmap and trim thresholds; False (and nothing changed) where libc is not glibc
    or jemalloc serves malloc already."""
    if under_jemalloc():
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        log.info("not glibc: allocator thresholds left as they are")
        return False
    ok = bool(mallopt(M_MMAP_THRESHOLD, FIXED_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, FIXED_THRESHOLD))
    return ok


def release_freed_memory() -> bool:
    """Hand every freed page back to the system now: jemalloc purges all its arenas (it keeps them
    otherwise, see above), glibc trims its heap. For a process that runs two trainings in turn (the
    training speed bench): one recipe's kept pages must not sit beside the other's working set.
    False where neither allocator answers."""
    libc = ctypes.CDLL(None)  # the symbols the process resolves: jemalloc's when preloaded
    if under_jemalloc():
        mallctl = libc.mallctl
        mallctl.argtypes = [
            ctypes.c_char_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_size_t,
        ]
        return mallctl(f"arena.{ALL_ARENAS}.purge".encode(), None, None, None, 0) == 0
    try:
        libc.malloc_trim(0)  # its answer only says whether anything was left to trim
    except AttributeError:  # not glibc
        return False
    return True
