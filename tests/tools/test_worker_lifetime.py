"""A worker that a command starts (bench_run's, through worker_processes.running_worker) ends with the
command however the command ends: it returns, raises, is interrupted (Ctrl-C), terminated (a
timeout's SIGTERM) or killed. A worker left behind would go on taking the queue's batches."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from tests.support.workers import wait_for_log, wait_until

pytestmark = pytest.mark.slow

# The command reduced to its worker's lifetime: a worker on a queue of its own (no other test's
# message reaches it), its pid on stdout, then a wait for one line on stdin ("raise": fail).
# Ctrl-C is put back as a terminal gives it: a shell that runs this suite in the background (CI,
# nohup) starts it with SIGINT ignored, which its children inherit, and Python then installs no
# KeyboardInterrupt handler, so the SIGINT case would test nothing but the ignoring.
COMMAND = """
import signal
import sys
from pathlib import Path

import django

signal.signal(signal.SIGINT, signal.default_int_handler)
django.setup()
from tools.worker_processes import running_worker

with running_worker("lifetime", Path(sys.argv[1]), queues="lifetime-test") as worker:
    sys.stdout.write(f"{worker.pid}\\n")
    sys.stdout.flush()
    if sys.stdin.readline() == "raise\\n":
        raise RuntimeError("the command failed")
"""


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (dead, not yet reaped by whoever inherited it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


ENDINGS = ["return", "raise", signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


@pytest.mark.parametrize("ending", ENDINGS, ids=lambda e: getattr(e, "name", e))
def test_it_stops_the_worker_however_the_command_ends(tmp_path, ending):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "slotwise.settings_test", "REDIS_URL": settings.REDIS_URL}
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND, str(tmp_path)],
        cwd=settings.BASE_DIR,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    worker_pid = None
    try:
        worker_pid = int(command.stdout.readline())
        wait_for_log(tmp_path / "lifetime.log", " ready.", timeout=120)
        pool = Path(f"/proc/{worker_pid}/task/{worker_pid}/children").read_text().split()
        worker = [worker_pid, *map(int, pool)]
        assert len(worker) == 2, "the worker and its pool process"

        if isinstance(ending, str):
            command.stdin.write(f"{ending}\n")
            command.stdin.flush()
        else:
            command.send_signal(ending)
        command.wait(timeout=60)

        wait_until(lambda: not any(map(alive, worker)), timeout=60, what="the worker's processes to end")
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        if worker_pid and alive(worker_pid):  # left behind: its own process group, stopped here
            os.killpg(worker_pid, signal.SIGKILL)
