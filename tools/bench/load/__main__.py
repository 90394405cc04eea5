"""The review load benchmark (`make bench-load`): locust's simulated reviewers against gunicorn.

    .venv/bin/python -m tools.bench.load [--users 50] [--seconds 60] [--products 5000]

1. A database of its own on the same PostgreSQL server (DATABASE_URL's, named slotwise_bench, or
   BENCH_DATABASE_NAME): created when missing, migrated, seeded with `manage.py bench_load_seed`
   (PRODUCTS products, 4 values each, one finished run, one reviewer per simulated user). It never
   touches the dev database.
2. gunicorn as docker-compose.yml runs it (3 sync workers, DEBUG off), on a free local port.
3. locust, headless: USERS reviewers for SECONDS seconds (tools/bench/load/locustfile.py).
4. `manage.py bench_load_check`: every write a simulated user saw succeed is stored once, with its
   history and its gold.

Prints requests/s, p50 / p95 / p99 (ms), errors per request kind, the load average while it ran,
then lost / doubled, and one JSON line with everything. Exits 1 on any error, lost or doubled write.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parents[3]  # the checkout: tools/bench/load/__main__.py
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
PY = sys.executable
BIN = Path(PY).parent
P95_TARGET_MS = 300
DEFAULT_DATABASE = "slotwise_bench"
GUNICORN_WORKERS = 3  # as docker-compose.yml's web service
SPAWN_PER_SECOND = 5  # sign-ins spread over the first seconds, as a team arriving
# Room for every simulated user to sign in before the measured window opens (PBKDF2: seconds each
# on a busy 2-core machine); locust stops itself SECONDS after the last sign-in.
SIGN_IN_ALLOWANCE_SECONDS = 600
LOAD_SAMPLE_SECONDS = 2


def say(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def bench_database_url(base: str, name: str) -> str:
    if not name.endswith("bench"):
        raise SystemExit(f"benchmark database {name!r}: its name must end in 'bench'")
    return urlunparse(urlparse(base)._replace(path=f"/{name}"))


def ensure_database(url: str) -> None:
    import psycopg

    parts = urlparse(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def manage(env: dict, *args: str) -> str:
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, check=False, capture_output=True, text=True
    )
    if done.returncode not in (0, 1) or (done.returncode == 1 and args[0] != "bench_load_check"):
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def start_gunicorn(env: dict, port: int, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [
                str(BIN / "gunicorn"),
                "slotwise.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(GUNICORN_WORKERS),
                "--timeout",
                "120",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as answer:
                if answer.status == 200:
                    return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"gunicorn did not answer on port {port}; see {log}")


class LoadSampler:
    """The 1-minute load average every few seconds while locust runs: how busy the machine was."""

    def __init__(self):
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(LOAD_SAMPLE_SECONDS):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def print_table(report: dict) -> None:
    say(f"{'request':<28}{'count':>7}{'errors':>8}{'req/s':>8}{'p50':>7}{'p95':>7}{'p99':>7}  (ms)")
    measured = [(name, s) for name, s in report["requests"].items() if name not in report["sign_in"]]
    rows = [*measured, ("all of the above", report["total"])]
    rows += [(f"({name}, before the window)", s) for name, s in report["sign_in"].items()]
    for name, s in rows:
        say(
            f"{name:<28}{s['requests']:>7}{s['errors']:>8}{s['requests_per_s']:>8}"
            f"{s['p50_ms']:>7.0f}{s['p95_ms']:>7.0f}{s['p99_ms']:>7.0f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--products", type=int, default=5000)
    args = parser.parse_args(argv)
    base = os.environ.get("DATABASE_URL")
    if not base:
        raise SystemExit("DATABASE_URL is not set: run it through `make bench-load`")
    url = bench_database_url(base, os.environ.get("BENCH_DATABASE_NAME", DEFAULT_DATABASE))
    password = secrets.token_urlsafe(16)
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "0",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # plain http on localhost, as docker-compose.yml serves it without a TLS proxy
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
    }
    ensure_database(url)
    manage(env, "migrate", "--noinput", "-v0")
    seeded = json.loads(
        manage(
            env,
            "bench_load_seed",
            "--products",
            str(args.products),
            "--users",
            str(args.users),
            f"--password={password}",
        )
    )
    say(
        f"seeded {url.rsplit('/', 1)[-1]}: {seeded['products']} products, {seeded['values']} values, {seeded['users']} reviewers"
    )
    work = Path(tempfile.mkdtemp(prefix="slotwise-bench-load-"))
    records, stats = work / "writes.jsonl", work / "stats.json"
    port = free_port()
    server = start_gunicorn(env, port, work / "gunicorn.log")
    load_start = os.getloadavg()[0]
    try:
        with LoadSampler() as load:
            subprocess.run(
                [
                    str(BIN / "locust"),
                    "-f",
                    str(LOCUSTFILE),
                    "--headless",
                    "--users",
                    str(args.users),
                    "--spawn-rate",
                    str(SPAWN_PER_SECOND),
                    "--run-time",
                    f"{args.seconds + SIGN_IN_ALLOWANCE_SECONDS}s",
                    "--host",
                    f"http://127.0.0.1:{port}",
                    "--only-summary",
                    "--loglevel",
                    "WARNING",
                    "--stop-timeout",
                    "10",
                ],
                cwd=ROOT,
                env={
                    **env,
                    "BENCH_PASSWORD": password,
                    "BENCH_USERS": str(args.users),
                    "BENCH_SECONDS": str(args.seconds),
                    "BENCH_RECORDS": str(records),
                    "BENCH_STATS": str(stats),
                },
                check=False,
                stdout=subprocess.DEVNULL,
                stderr=open(work / "locust.log", "wb"),
            )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    checked = json.loads(manage(env, "bench_load_check", "--records", str(records)).strip().splitlines()[-1])
    report = json.loads(stats.read_text())
    say(
        f"\n{args.users} reviewers, {report['measured_seconds']} s after the last sign-in, "
        f"gunicorn x{GUNICORN_WORKERS} (DEBUG off)"
    )
    print_table(report)
    total = report["total"]
    samples = load.samples or [load_start]
    result = {
        **total,
        "errors": total["errors"] + report["sign_in_errors"],
        "all_signed_in": report["all_signed_in"],
        "error_messages": report["errors"],
        "users": args.users,
        "seconds": args.seconds,
        "p95_target_ms": P95_TARGET_MS,
        "p95_met": total["p95_ms"] < P95_TARGET_MS,
        "load_average": {
            "start": round(load_start, 2),
            "mean": round(sum(samples) / len(samples), 2),
            "max": round(max(samples), 2),
            "cpus": os.cpu_count(),
        },
        "writes": checked["writes_recorded"],
        "lost": checked["lost"],
        "doubled": checked["doubled"],
        "unrecorded": checked["unrecorded"],
        "problems": checked["problems"],
        "logs": str(work),
    }
    say(
        f"\nload average (1 min) during the run: mean {result['load_average']['mean']}, max "
        f"{result['load_average']['max']} on {os.cpu_count()} CPUs"
    )
    say(
        f"writes confirmed: {checked['writes_recorded']}; lost {checked['lost']}, doubled {checked['doubled']}, "
        f"history rows without a confirmed write {checked['unrecorded']}"
    )
    say(json.dumps(result))
    failed = result["errors"] or not report["all_signed_in"] or checked["lost"] or checked["doubled"]
    failed = failed or checked["unrecorded"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
