"""Real Celery worker processes for the drills, the benchmarks and the tests (what `make dev` runs).

Each worker starts in its own process group, so a SIGKILL of the group takes its pool child with it,
as when a machine or a container dies. In a group of its own it gets no Ctrl-C from the terminal,
and no finally block runs when its starter is terminated or killed; so the kernel kills a worker when
the thread that started it ends, however it ends (PR_SET_PDEATHSIG), and Celery does the same for
the pool child. A worker left behind would go on taking its queue's work for nobody.
"""

import ctypes
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection


def current_database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_preexec(address_space_mb: int | None):
    """The preexec_fn of a worker: it dies with its starter; address_space_mb caps its virtual memory
    (RLIMIT_AS): its allocations past it fail."""
    libc = ctypes.CDLL(None, use_errno=True)  # in the parent: after fork the child only calls it
    starter = os.getpid()

    def apply() -> None:
        # SIGKILL, not SIGTERM: a warm shutdown would finish the batch in hand for nobody.
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != starter:  # the starter died before prctl: no signal will come
            os._exit(1)
        if address_space_mb:
            limit = address_space_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def start_worker(
    name: str,
    log_dir: Path,
    env: dict | None = None,
    queues: str = "gpu",
    app: str = "workers",
    address_space_mb: int | None = None,
) -> subprocess.Popen:
    """A worker of the Celery app `app` (the product's, or a drill's that adds a hook) on `queues`;
    address_space_mb caps its virtual memory and its pool process's (a machine with less memory)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    worker_env = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "slotwise.settings"),
        **(env or {}),
    }
    with open(log_dir / f"{name}.log", "ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                app,
                "worker",
                "-Q",
                queues,
                "-c",
                "1",
                "-n",
                f"{name}@%h",
                "--pool",
                "prefork",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=settings.BASE_DIR,
            env=worker_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=worker_preexec(address_space_mb),
        )


def signal_worker(proc: subprocess.Popen, signum: int) -> None:
    """Send `signum` to the worker's whole process group (SIGSTOP / SIGCONT: a worker that hangs)."""
    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        pass


def kill_worker(proc: subprocess.Popen) -> None:
    """SIGKILL the worker and its pool child: nothing gets to clean up or acknowledge."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def stop_worker(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Warm shutdown (SIGTERM), then SIGKILL of the group if it does not end in time."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
    kill_worker(proc)


@contextmanager
def running_worker(name: str, log_dir: Path, **options) -> Iterator[subprocess.Popen]:
    """start_worker(name, log_dir, **options) for the body of a `with`, stopped (warm shutdown) when it
    ends; if the process is terminated or killed instead, the kernel kills the worker."""
    proc = start_worker(name, log_dir, **options)
    try:
        yield proc
    finally:
        stop_worker(proc)
