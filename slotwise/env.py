"""Tiny helpers that read settings from the environment and fail loudly on a bad value."""

import os
from urllib.parse import parse_qs, unquote, urlparse


class ImproperlyConfiguredEnv(ValueError):
    """An environment variable holds a value the application cannot use."""


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfiguredEnv(f"{name} must be set")
    return value


def env_choice(name: str, choices, default: str) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfiguredEnv(f"{name}={value!r} is not one of {', '.join(sorted(choices))}")
    return value


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r} must be at least {minimum}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfiguredEnv(f"{name}={raw!r} is not a number") from None


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def parse_database_url(url: str) -> dict:
    """postgres://user:pass@host:port/name?sslmode=... -> Django DATABASES entry."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ImproperlyConfiguredEnv(f"DATABASE_URL scheme {parsed.scheme!r} is not PostgreSQL")
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ImproperlyConfiguredEnv("DATABASE_URL has no database name")
    options = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    host = options.pop("host", None) or unquote(parsed.hostname or "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }
