"""allocator.limit_fragmentation on glibc: tensors of changing sizes, freed while small tensors
allocated after them stay alive (as in a training step), come back to the system with it and pile
up in the heap without it (the negative control). Each case runs in a fresh process, since the
allocator's settings last for the life of a process."""

import subprocess
import sys

import pytest

PROBE = """
import sys, torch
if sys.argv[1] == "fix":
    from extraction.engine.allocator import limit_fragmentation
    assert limit_fragmentation()
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
before, alive = rss_mb(), []
for mb in (40, 30, 20, 35, 25, 45, 15, 38, 22, 33, 18, 28) * 2:
    big = torch.ones(mb * 2**18)  # float32: mb MB
    alive.append(torch.ones(1000))  # a small live block after it pins the heap
    del big
print(rss_mb() - before)
"""


def growth_mb(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_tensors_of_changing_sizes_return_to_the_system():
    assert growth_mb("default") > 60  # glibc's growing threshold: freed blocks stay resident
    assert growth_mb("fix") < 20
