"""Which processes need the real SECRET_KEY, and what a real one is.

The key signs sessions, CSRF tokens and messages, so servers and workers must have it. A management
command that reads a file, writes an export or migrates signs nothing and runs without one.
"""

from pathlib import Path

from django.core.checks.security.base import (
    SECRET_KEY_INSECURE_PREFIX,
    SECRET_KEY_MIN_LENGTH,
    SECRET_KEY_MIN_UNIQUE_CHARACTERS,
)

from slotwise.env import ImproperlyConfiguredEnv

MAKE_A_STRONG_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"

MANAGE_SCRIPTS = {"manage.py", "django-admin"}
# manage.py commands that serve requests, start Celery workers (which inherit this environment) or
# check a deploy: these need the key like gunicorn and celery do.
COMMANDS_NEEDING_THE_KEY = {"runserver", "testserver", "check", "bench_run", "fault_drill"}


def needs_secret_key(argv: list[str]) -> bool:
    """False only for a manage.py command outside COMMANDS_NEEDING_THE_KEY.

    Anything else (gunicorn, celery, a script, the test run) needs the key: a process not
    recognised here is treated as one that serves.
    """
    if not argv or Path(argv[0]).name not in MANAGE_SCRIPTS:
        return True
    command = argv[1] if len(argv) > 1 else "help"
    return command in COMMANDS_NEEDING_THE_KEY


def secret_key_weakness(key: str) -> str:
    """What makes `key` weak by Django's own rule (`check --deploy`'s security.W009), or "" if nothing."""
    if key.startswith(SECRET_KEY_INSECURE_PREFIX):
        return f"it starts with {SECRET_KEY_INSECURE_PREFIX!r}, the mark of a key made for development"
    if len(key) < SECRET_KEY_MIN_LENGTH:
        return f"it has {len(key)} characters, fewer than {SECRET_KEY_MIN_LENGTH}"
    if len(set(key)) < SECRET_KEY_MIN_UNIQUE_CHARACTERS:
        return f"it has {len(set(key))} different characters, fewer than {SECRET_KEY_MIN_UNIQUE_CHARACTERS}"
    return ""


def refuse_a_weak_secret_key(key: str) -> None:
    """Stop start-up, saying why and how to make a strong key, when `key` is weak.

    A weak key lets whoever guesses it forge sessions (sign in as anyone), so a process that signs
    must not start with one; Django's deploy check only warns, and only when someone runs it.
    """
    weakness = secret_key_weakness(key)
    if weakness:
        raise ImproperlyConfiguredEnv(
            f"SECRET_KEY is too weak to serve with DEBUG off: {weakness}. "
            f"Make a strong one with: {MAKE_A_STRONG_KEY}"
        )
