"""Which processes need the real SECRET_KEY.

The key signs sessions, CSRF tokens and messages, so servers and workers must have it. A management
command that reads a file, writes an export or migrates signs nothing and runs without one.
"""

from pathlib import Path

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
