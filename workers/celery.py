"""The Celery app. Configured from Django settings (CELERY_ namespace).

Two queues: `gpu` for decoding (one worker process per GPU, model loaded once per process) and
`light` for everything else (imports, exports, bulk review actions), so a long import never waits
behind a decoding batch.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slotwise.settings")

app = Celery("slotwise")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["workers", "catalog", "extraction", "review", "evaluation"])
