"""This checkout's PostgreSQL 16, from the pgserver wheel: start, stop, restart."""

from __future__ import annotations

import logging
import os
import pwd
import subprocess
from pathlib import Path

from scripts.local_services.checkout import PG_DB, Checkout, ServicesError, pg_pid
from scripts.local_services.owners import conflict_message, is_ours, postgres_on

PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root; pgserver uses this account too

log = logging.getLogger("services")


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
