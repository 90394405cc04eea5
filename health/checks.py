"""Health of the parts the product stands on: database, Redis, and Celery workers per queue."""

from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import connection
from django.db.utils import DatabaseError


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            version = cursor.fetchone()[0]
        return Check("PostgreSQL", True, version.split(" on ")[0])
    except DatabaseError as exc:
        return Check("PostgreSQL", False, str(exc))


def check_redis() -> Check:
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        info = client.info("server")
        return Check("Redis", True, f"Redis {info.get('redis_version', '?')}")
    except redis.RedisError as exc:
        return Check("Redis", False, str(exc))


def check_workers(timeout: float = 1.5) -> list[Check]:
    from workers.celery import app

    try:
        replies = app.control.inspect(timeout=timeout).active_queues() or {}
    except (redis.RedisError, OSError) as exc:
        return [Check("Workers", False, f"cannot ask workers: {exc}")]
    if not replies:
        return [Check("Workers", False, "no worker answered")]
    checks = []
    for queue in ("gpu", "light"):
        names = sorted(
            worker for worker, queues in replies.items() if any(q["name"] == queue for q in queues)
        )
        checks.append(
            Check(
                f"Workers on queue '{queue}'", bool(names), ", ".join(names) if names else "no worker listens"
            )
        )
    return checks


def all_checks() -> list[Check]:
    checks = [check_database(), check_redis()]
    if checks[1].ok:
        checks.extend(check_workers())
    return checks
