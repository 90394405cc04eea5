"""A checkout: its working tree, its .data folder, and the pid files of its servers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PG_DB = "slotwise"


class ServicesError(RuntimeError):
    """The servers cannot be started as asked: a port is someone else's, or a port setting is unreadable."""


@dataclass(frozen=True)
class Ports:
    pg: int
    redis: int


@dataclass(frozen=True)
class Checkout:
    """A working tree and its .data folder (SLOTWISE_DATA_DIR moves the latter)."""

    root: Path
    data: Path

    @classmethod
    def here(cls) -> Checkout:
        return cls(ROOT, Path(os.environ.get("SLOTWISE_DATA_DIR", ROOT / ".data")).resolve())

    @property
    def pgdata(self) -> Path:
        return self.data / "pg"

    @property
    def redis_dir(self) -> Path:
        return self.data / "redis"

    @property
    def ports_file(self) -> Path:
        return self.data / "ports.json"


@dataclass(frozen=True)
class Listener:
    """A server found on a port: where it keeps its data and its process id, when it says."""

    port: int
    data_dir: Path | None
    pid: int | None


def _pid_in(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def pg_pid(checkout: Checkout) -> int | None:
    return _pid_in(checkout.pgdata / "postmaster.pid")


def redis_pid(checkout: Checkout) -> int | None:
    return _pid_in(checkout.redis_dir / "redis.pid")
