"""What this machine offers a process, read once at start-up for settings' defaults."""

import os
from pathlib import Path

# Where a container's memory limit is read: cgroup v2, then v1 (which says "no limit" with a huge number).
CGROUP_MEMORY_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def memory_mb() -> int:
    """The memory this process may use: the machine's, or its container's cgroup limit if lower."""
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    limits = [physical]
    for path in CGROUP_MEMORY_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    return min(limits) // 2**20
