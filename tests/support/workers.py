"""Start real Celery worker processes against the test database.

The tests start workers exactly the way the fault drill and the benchmark do
(extraction/worker_processes.py), only with the test settings module.
"""

import tempfile
import time
from pathlib import Path

from extraction import worker_processes

stop_worker = worker_processes.stop_worker


def start_worker(
    queues: str = "gpu,light", name: str = "w1", env: dict | None = None, log_path: Path | None = None
):
    """A worker on `queues`, connected to the running test's database; logs to log_path's folder."""
    log_dir = log_path.parent if log_path else Path(tempfile.mkdtemp(prefix="slotwise-worker-"))
    worker_env = {"DJANGO_SETTINGS_MODULE": "slotwise.settings_test", **(env or {})}
    return worker_processes.start_worker(name, log_dir, env=worker_env, queues=queues)


def wait_until(predicate, timeout: float = 120, interval: float = 0.3, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")
