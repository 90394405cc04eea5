"""Start real Celery worker processes against the test database.

The tests start workers exactly the way the fault drill and the benchmark do
(tools/worker_processes.py), only with the test settings module.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings

from tools import worker_processes

stop_worker = worker_processes.stop_worker


def own_media_root(name: str) -> str:
    """A MEDIA_ROOT of a worker's own, never the test run's: what a worker reads of an upload or an
    export it must find in PostgreSQL, as on a machine of its own."""
    media_root = tempfile.mkdtemp(prefix=f"slotwise-{name}-media-")
    assert Path(media_root).resolve() != Path(settings.MEDIA_ROOT).resolve()
    return media_root


def start_worker(
    queues: str = "gpu,light,train",
    name: str = "w1",
    env: dict | None = None,
    log_path: Path | None = None,
    address_space_mb: int | None = None,
):
    """A worker on `queues`, connected to the running test's database, with a MEDIA_ROOT of its own;
    logs to log_path's folder; address_space_mb caps its virtual memory (RLIMIT_AS)."""
    log_dir = log_path.parent if log_path else Path(tempfile.mkdtemp(prefix="slotwise-worker-"))
    worker_env = {
        "DJANGO_SETTINGS_MODULE": "slotwise.settings_test",
        "MEDIA_ROOT": own_media_root(name),
        **(env or {}),
    }
    worker = worker_processes.start_worker(
        name, log_dir, env=worker_env, queues=queues, address_space_mb=address_space_mb
    )
    worker.media_root = Path(worker_env["MEDIA_ROOT"])
    return worker


def peak_memory_mb(worker: subprocess.Popen) -> dict[str, int]:
    """The largest peak resident (VmHWM) and virtual (VmPeak) memory of the worker and its pool
    processes, in MB, read while they live."""
    pids = [worker.pid, *Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text().split()]
    peaks = {"VmHWM": 0, "VmPeak": 0}
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in peaks:
                peaks[key] = max(peaks[key], int(value.split()[0]) // 1024)
    return peaks


def start_beat(log_path: Path, env: dict | None = None) -> subprocess.Popen:
    """A real `celery beat` (the app's own schedule), its schedule file and log beside log_path."""
    beat_env = {
        **os.environ,
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": "slotwise.settings_test",
        "MEDIA_ROOT": own_media_root("beat"),
        **(env or {}),
    }
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers", "beat", "--loglevel", "INFO",
             "--schedule", str(log_path.with_suffix(".schedule"))],
            cwd=settings.BASE_DIR, env=beat_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def wait_for_log(path: Path, text: str, timeout: float = 120) -> None:
    """Until `text` shows in the log file at `path` (say, a worker's first task ending)."""
    wait_until(
        lambda: path.is_file() and text in path.read_text(errors="replace"),
        timeout=timeout,
        what=f"{text!r} in {path.name}",
    )


def wait_until(predicate, timeout: float = 120, interval: float = 0.3, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
