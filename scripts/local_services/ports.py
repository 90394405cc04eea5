"""The ports a checkout's servers use: chosen once from a hash of its path, recorded in .data.

SLOTWISE_PG_PORT / SLOTWISE_REDIS_PORT override them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from scripts.local_services.checkout import PG_DB, Checkout, Ports, ServicesError, pg_pid, redis_pid
from scripts.local_services.owners import is_ours, port_is_free, postgres_on, redis_on

# The fixed ports every checkout used before each chose its own; kept by a checkout that has data.
LEGACY_PORTS = (5433, 6380)
# Chosen ports: PostgreSQL on an odd port of this range, Redis on the next one. Below Linux's
# ephemeral range (32768+), so an outgoing connection never holds one.
PORT_BASE, PORT_PAIRS = 15433, 2000
PORT_TRIES = 50


def hashed_pairs(root: Path):
    """This checkout's candidate (pg, redis) ports: its own pair first, then the following ones."""
    start = int.from_bytes(hashlib.sha256(str(root.resolve()).encode()).digest()[:8], "big")
    for step in range(PORT_TRIES):
        pg = PORT_BASE + 2 * ((start + step) % PORT_PAIRS)
        yield pg, pg + 1


def choose_ports(checkout: Checkout) -> Ports:
    """The first candidate pair whose two ports are free or already served by this checkout."""
    candidates = list(hashed_pairs(checkout.root))
    if (checkout.pgdata / "PG_VERSION").exists():
        candidates.insert(0, LEGACY_PORTS)
    for pg, redis in candidates:
        pg_ok = port_is_free(pg) or is_ours(postgres_on(pg), checkout.pgdata, pg_pid(checkout))
        redis_ok = port_is_free(redis) or is_ours(redis_on(redis), checkout.redis_dir, redis_pid(checkout))
        if pg_ok and redis_ok:
            return Ports(pg, redis)
    raise ServicesError(
        f"no free pair of ports among {candidates[:3]}...: free some, or set SLOTWISE_PG_PORT"
    )


def recorded_ports(checkout: Checkout) -> Ports | None:
    if not checkout.ports_file.exists():
        return None
    try:
        record = json.loads(checkout.ports_file.read_text())
        return Ports(pg=int(record["pg"]), redis=int(record["redis"]))
    except (ValueError, TypeError, KeyError):
        raise ServicesError(
            f'{checkout.ports_file} is not {{"pg": PORT, "redis": PORT}}: fix it, or remove it to choose again'
        ) from None


def _port_from_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ServicesError(f"{name}={raw!r} is not a port number")
    return int(raw)


def _overridden(claimed: Ports) -> Ports:
    return Ports(
        _port_from_env("SLOTWISE_PG_PORT", claimed.pg), _port_from_env("SLOTWISE_REDIS_PORT", claimed.redis)
    )


def ports(checkout: Checkout) -> Ports:
    """SLOTWISE_PG_PORT / SLOTWISE_REDIS_PORT if set, else the recorded pair, else one chosen now."""
    claimed = recorded_ports(checkout)
    if claimed is None:
        claimed = choose_ports(checkout)
        checkout.data.mkdir(parents=True, exist_ok=True)
        partial = checkout.ports_file.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(asdict(claimed)) + "\n")
        partial.replace(checkout.ports_file)  # atomic: two commands choosing at once agree
    return _overridden(claimed)


def known_ports(checkout: Checkout) -> Ports:
    """The ports as `ports` gives them, read only: nothing is probed, chosen or written (a checkout
    whose servers never started has the legacy pair). Settings' defaults and the drill read this."""
    return _overridden(recorded_ports(checkout) or Ports(*LEGACY_PORTS))


def local_database_url() -> str:
    """This checkout's own PostgreSQL: DATABASE_URL's default when it is unset."""
    return database_url(known_ports(Checkout.here()).pg)


def local_redis_url() -> str:
    """This checkout's own Redis: REDIS_URL's default when it is unset."""
    return redis_url(known_ports(Checkout.here()).redis)


def database_url(port: int) -> str:
    return f"postgres://postgres@127.0.0.1:{port}/{PG_DB}"


def redis_url(port: int, db: int = 0) -> str:
    return f"redis://127.0.0.1:{port}/{db}"
