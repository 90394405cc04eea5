"""The fault drill's victim worker: the product's Celery app, with a hook that holds the write
transaction open so that the drill can kill the worker inside it.

    celery -A tools.drill.write_pause worker -Q gpu ...    (tools/drill/cases.py, kill_while_writing)

The product's worker (`celery -A workers worker`) never imports this module: there
runner/leases.py's on_values_written stays None. Here each pool process sets it to
pause_inside_the_write, which names the connection with WRITE_MARKER and waits
SLOTWISE_DRILL_WRITE_PAUSE_SECONDS, values inserted and not committed.
"""

import os
import time

from celery.signals import worker_process_init
from django.db import connection

from workers.celery import app  # noqa: F401  (`celery -A tools.drill.write_pause` finds the app here)

# The name the victim's connection carries while it waits: the drill finds it by this marker in
# pg_stat_activity, whatever statement came last.
WRITE_MARKER = "slotwise-drill-write-pause"
PAUSE_ENV = "SLOTWISE_DRILL_WRITE_PAUSE_SECONDS"


def pause_inside_the_write(rows) -> None:
    """Wait inside the write transaction (values inserted, not committed): the drill kills us here.

    set_config(..., true) names the connection for this transaction only: a commit or a rollback
    (the backend ending with the killed worker) takes the name away with it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('application_name', %s, true)", [WRITE_MARKER])
    time.sleep(float(os.environ[PAUSE_ENV]))


@worker_process_init.connect
def install_the_pause(**kwargs) -> None:
    """In each pool process, once Django is set up (the worker's parent did it before forking)."""
    from runner import leases

    leases.on_values_written = pause_inside_the_write
