"""The Celery app. Configured from Django settings (CELERY_ namespace).

Three queues: `gpu` for decoding (one worker process per GPU, model loaded once per process),
`train` for training jobs (a worker process of its own: a job holds it for minutes), and `light`
for everything else (imports, exports, bulk review actions, the reaper), so a long import never
waits behind a decoding batch or a training job.

The beat schedule (the periodic reaper) is defined here and nowhere else; `celery -A workers beat`
sends its tasks, a `light` worker runs them. Intervals come from settings (REAPER_INTERVAL_SECONDS,
STRANDED_UPLOAD_SWEEP_SECONDS).
"""

import os

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slotwise.settings")

app = Celery("slotwise")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "catalog", "extraction", "review", "evaluation"])


@app.on_after_configure.connect
def schedule_the_reaper(sender: Celery, **kwargs) -> None:
    """The beat schedule, added once the app reads its configuration (settings are not read at import:
    the slotwise package imports this module before Django has its settings)."""
    every_round = settings.REAPER_INTERVAL_SECONDS
    # A dead worker's leases go back to the queue (or are cancelled in a stopped run).
    sender.add_periodic_task(
        every_round, sender.signature("workers.tasks.release_expired_leases"), name="release-expired-leases"
    )
    # Work that waits with no live lease over it gets its wake-up message again.
    sender.add_periodic_task(
        every_round, sender.signature("workers.tasks.wake_waiting_runs"), name="wake-waiting-runs"
    )
    # Training jobs whose worker stopped beating resume elsewhere from their last checkpoint.
    sender.add_periodic_task(
        every_round, sender.signature("workers.tasks.resume_stalled_training"), name="resume-stalled-training"
    )
    # Uploads left at mapping longer than STRANDED_UPLOAD_MAX_AGE_HOURS go, with their files.
    sender.add_periodic_task(
        settings.STRANDED_UPLOAD_SWEEP_SECONDS,
        sender.signature("workers.tasks.remove_stranded_uploads"),
        name="remove-stranded-uploads",
    )
