"""This checkout's PostgreSQL and Redis as the drills see them: recognised by the checkout's one port
definition (scripts/local_services/ports.py, what `scripts/services.py urls` prints) and restarted
through scripts/services.py, which also checks that the server on the port runs from this checkout."""

import subprocess
import sys
from urllib.parse import urlparse

from django.conf import settings

from scripts.local_services.checkout import Checkout
from scripts.local_services.ports import known_ports

LOCAL_HOSTS = {"127.0.0.1", "localhost"}


def redis_is_local() -> bool:
    """True when REDIS_URL is the Redis that scripts/services.py manages (so the drill may restart it)."""
    url = urlparse(settings.REDIS_URL)
    return url.hostname in LOCAL_HOSTS and (url.port or 6379) == known_ports(Checkout.here()).redis


def postgres_is_local() -> bool:
    """True when the database is on the port of this checkout's PostgreSQL (scripts/services.py then
    also checks that the server there runs from this checkout's data before restarting it)."""
    db = settings.DATABASES["default"]
    return db.get("HOST") in LOCAL_HOSTS and int(db.get("PORT") or 5432) == known_ports(Checkout.here()).pg


def _services(action: str) -> None:
    done = subprocess.run(
        [sys.executable, str(settings.BASE_DIR / "scripts" / "services.py"), action],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode:
        raise RuntimeError(f"services.py {action} failed: {done.stderr.strip() or done.stdout.strip()}")


def restart_redis() -> None:
    _services("restart-redis")


def restart_postgres() -> None:
    _services("restart-postgres")
