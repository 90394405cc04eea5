"""Whose server listens on a port: this checkout's (same data directory, same pid) or another's."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from scripts.local_services.checkout import Checkout, Listener

PROBE_SECONDS = 2  # a server of ours answers at once; this only bounds a silent listener


def port_is_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (SO_REUSEADDR: a closed connection's TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _parent_pid(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), None)


def postgres_on(port: int) -> Listener | None:
    """Who serves PostgreSQL on the port: None when nothing listens there."""
    if port_is_free(port):
        return None
    import psycopg

    try:
        with psycopg.connect(
            host="127.0.0.1", port=port, user="postgres", dbname="postgres", connect_timeout=PROBE_SECONDS
        ) as conn:
            data_dir, backend = conn.execute(
                "SELECT current_setting('data_directory'), pg_backend_pid()"
            ).fetchone()
            # The connection's backend is a child of the postmaster, whose pid postmaster.pid holds.
            # Read while the connection is open: once closed, the backend exits and /proc forgets it.
            postmaster = _parent_pid(backend)
    except psycopg.Error:
        return Listener(port, None, None)  # not a trust-auth pgserver: someone else's
    return Listener(port, Path(data_dir), postmaster)


def redis_on(port: int) -> Listener | None:
    """Who serves Redis on the port: None when nothing listens there."""
    if port_is_free(port):
        return None
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        client = redis.Redis(
            host="127.0.0.1",
            port=port,
            socket_timeout=PROBE_SECONDS,
            socket_connect_timeout=PROBE_SECONDS,
            retry=Retry(NoBackoff(), 0),  # one question: a silent listener is no Redis of ours
            decode_responses=True,
        )
        data_dir = client.config_get("dir")["dir"]
        pid = int(client.info("server")["process_id"])
    except (redis.RedisError, KeyError, ValueError):
        return Listener(port, None, None)
    return Listener(port, Path(data_dir), pid)


def is_ours(listener: Listener | None, data_dir: Path, pid: int | None) -> bool:
    """The server runs from this checkout's data: same directory and the pid its pid file holds.

    The pid matters: a server left running by an earlier checkout at the same path, whose files
    were deleted since, reports this very directory.
    """
    return (
        listener is not None
        and listener.data_dir is not None
        and listener.data_dir.resolve() == data_dir.resolve()
        and pid is not None
        and listener.pid == pid
    )


def conflict_message(service: str, listener: Listener, checkout: Checkout) -> str:
    """Whose server holds the port, and what to run about it."""
    port = listener.port
    moved = (
        f"or give this checkout other ports: rm {checkout.ports_file} and run `make services` again"
        if not ("SLOTWISE_PG_PORT" in os.environ or "SLOTWISE_REDIS_PORT" in os.environ)
        else "or unset SLOTWISE_PG_PORT / SLOTWISE_REDIS_PORT (another checkout's `services.py urls` "
        "exports them) so that this checkout uses its own"
    )
    head = f"{service} on port {port} is not this checkout's ({checkout.root})"
    if listener.data_dir is None:
        return f"{head}: another program listens there. Free the port, {moved}."
    other_root = listener.data_dir.parent.parent  # <checkout>/.data/<pg or redis>
    if listener.data_dir.resolve().parent == checkout.data.resolve():
        return (
            f"{head}: it runs from {listener.data_dir} but is not the server of this data (pid "
            f"{listener.pid}), a server left by an earlier checkout at this path. Stop it "
            f"(kill {listener.pid}), {moved}."
        )
    if (other_root / "scripts" / "services.py").exists():
        return (
            f"{head}: it belongs to the checkout {other_root} (its data: {listener.data_dir}). Stop it "
            f"there (cd {other_root} && make services-down), {moved}."
        )
    return f"{head}: its data is {listener.data_dir} (pid {listener.pid}). Stop it, {moved}."
