"""allocator.limit_fragmentation on glibc: tensors of changing sizes, freed while small tensors
allocated after them stay alive (as in a training step), come back to the system with it and pile
up in the heap without it (the negative control). Each case runs in a fresh process, since the
allocator's settings last for the life of a process.

Both cases start from the state glibc's dynamic threshold reaches once a training step has freed a
32 MB mmapped block (mmap threshold 32 MB, trim threshold twice that: malloc.c), set through
GLIBC_TUNABLES in a clean environment, so the control does not depend on which blocks the process
happened to free before (a fresh-clone CI run once read 50 MB of pile-up where quiet runs read 131)."""

import os
import pathlib
import subprocess
import sys

import pytest

from extraction.engine.train.allocator import JEMALLOC, jemalloc_command

PROBE = """
import sys, torch
if sys.argv[1] == "fix":
    from extraction.engine.train.allocator import limit_fragmentation
    assert limit_fragmentation()
def rss_mb():  # anonymous pages only: the libraries' file pages come and go with the page cache
    status = open("/proc/self/status").read()
    return int(status.split("RssAnon:")[1].split()[0]) / 1024
before, alive = rss_mb(), []
for mb in (40, 30, 20, 35, 25, 45, 15, 38, 22, 33, 18, 28) * 2:
    big = torch.ones(mb * 2**18)  # float32: mb MB
    alive.append(torch.ones(1000))  # a small live block after it pins the heap
    del big
print(rss_mb() - before)
"""


REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
RAISED_THRESHOLDS = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=67108864"


def growth_mb(mode: str) -> float:
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    env.update(GLIBC_TUNABLES=RAISED_THRESHOLDS, PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_tensors_of_changing_sizes_return_to_the_system():
    assert growth_mb("default") > 60  # the raised threshold: freed heap blocks stay resident
    assert growth_mb("fix") < 20  # limit_fragmentation fixes the thresholds back low


def test_the_jemalloc_command_preloads_it_once_and_only_when_installed(tmp_path, monkeypatch):
    lib = tmp_path / "libjemalloc.so.2"
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("SLOTWISE_NO_JEMALLOC", raising=False)
    assert jemalloc_command(["train", "--help"], lib) is None  # not installed
    lib.write_bytes(b"")
    exe, args, env = jemalloc_command(["train", "--steps", "3"], lib)
    assert args == [exe, "-m", "extraction", "train", "--steps", "3"]
    assert env["LD_PRELOAD"] == str(lib) and "background_thread" in env["MALLOC_CONF"]
    monkeypatch.setenv("LD_PRELOAD", env["LD_PRELOAD"])
    assert jemalloc_command(["train"], lib) is None  # already under it: no second exec
    monkeypatch.delenv("LD_PRELOAD")
    monkeypatch.setenv("SLOTWISE_NO_JEMALLOC", "1")
    assert jemalloc_command(["train"], lib) is None


@pytest.mark.skipif(not JEMALLOC.is_file(), reason="libjemalloc2 not installed")
def test_the_train_command_runs_under_jemalloc_when_installed(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("SLOTWISE_NO_JEMALLOC", raising=False)
    _, _, env = jemalloc_command(["train"])
    maps = subprocess.run(
        [sys.executable, "-c", "print(open('/proc/self/maps').read())"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "libjemalloc" in maps.stdout  # a process started with that environment runs on jemalloc
    run = subprocess.run(
        [sys.executable, "-m", "extraction", "train", "--help"], capture_output=True, text=True
    )
    assert run.returncode == 0 and "--lora" in run.stdout  # the re-executed command still works


RELEASE_PROBE = """
import torch
from extraction.engine.train.allocator import release_freed_memory
def rss_mb():
    status = open("/proc/self/status").read()
    return int(status.split("RssAnon:")[1].split()[0]) / 1024
before = rss_mb()
blocks = [torch.ones(2**18) for _ in range(300)]  # 300 blocks of 1 MB, written: resident
del blocks
kept = rss_mb() - before
released = release_freed_memory()
print(kept, rss_mb() - before, released)
"""


@pytest.mark.skipif(not JEMALLOC.is_file(), reason="libjemalloc2 not installed")
def test_release_freed_memory_hands_kept_pages_back(monkeypatch):
    """The speed bench runs two recipes in turn and releases one's freed pages before the other's
    steps. Under jemalloc told to keep freed pages (no decay, so nothing depends on time), 300 MB
    freed stay resident (the control) until release_freed_memory purges them."""
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    monkeypatch.delenv("SLOTWISE_NO_JEMALLOC", raising=False)
    monkeypatch.setenv("MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")
    _, _, env = jemalloc_command(["train"])
    env.update(PYTHONPATH=str(REPO_ROOT), OMP_NUM_THREADS="1")
    out = subprocess.run(
        [sys.executable, "-c", RELEASE_PROBE], env=env, capture_output=True, text=True, check=True
    )
    kept, after, released = out.stdout.split()
    assert released == "True"
    assert float(kept) > 250  # freed, yet still resident: kept for reuse
    assert float(after) < 50  # purged
