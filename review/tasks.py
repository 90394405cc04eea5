"""Background work of the review: bulk actions and exports, on the `light` queue (the default one;
only workers.tasks.gpu_* are routed to `gpu`).

Tasks carry job ids only, fetch the row again and return quietly when it is gone or finished.
"""

import logging

from celery import shared_task

from review import bulk, exports

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
def run_bulk_action(job_id: int) -> None:
    bulk.run_or_mark_failed(job_id)


@shared_task(ignore_result=True)
def run_export(job_id: int) -> None:
    try:
        exports.run_export(job_id)
    except Exception as exc:  # noqa: BLE001 - the job page must say it failed, whatever the cause
        log.exception("export %s failed", job_id)
        exports.mark_failed(job_id, f"{type(exc).__name__}: {exc}")
