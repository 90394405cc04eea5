"""One run, one model: the run decodes with the copy of its model that the first worker loaded, by
fingerprint (extraction/engine/fingerprint.py), whichever machine each worker runs on.

A worker whose copy has another fingerprint (other weights under the same path, another
slotwise.json, another precision) leases nothing: the run page says so (an incident) and the
wake-up goes out again so that another worker takes the run's batches (also each later time it takes
one of this run's messages, at most once per lease length).
"""

import logging
import time
from collections.abc import Callable

from django.conf import settings

from extraction.models import Run
from runner import incidents

log = logging.getLogger(__name__)

# When this process last refused each (run, fingerprint): one incident each, and the wake-up it took
# passed on at most once per lease length, so two refusing workers never bounce it back and forth
# fast, while a continuation or a wake-up they took still reaches a worker whose copy matches.
_REFUSED: dict[tuple[int, str], float] = {}


def run_fingerprint(run_id: int, fingerprint: str) -> str | None:
    """The run's fingerprint, `fingerprint` if it had none yet (None: the run is gone). The update
    is conditional, so of two workers starting at once exactly one sets it."""
    Run.objects.filter(pk=run_id, model_fingerprint="").update(model_fingerprint=fingerprint)
    return Run.objects.filter(pk=run_id).values_list("model_fingerprint", flat=True).first()


def refuses(run: Run, owner: str, fingerprint: str, model: str, wake: Callable[..., bool]) -> bool:
    """True when this worker's copy of the run's model is not the one the run decodes with; the run is
    then passed on through `wake` (the loop's wake-up, runner.loop)."""
    pinned = run_fingerprint(run.id, fingerprint)
    if pinned is None or pinned == fingerprint:
        return False
    key, now = (run.id, fingerprint), time.monotonic()
    if key not in _REFUSED:
        log.warning(
            "run %s decodes with model %s, this worker has %s: left to others", run.id, pinned, fingerprint
        )
        incidents.model_mismatch(run.id, owner, model or run.model_dir or "(bundled)", fingerprint, pinned)
    elif now - _REFUSED[key] < settings.EXTRACTION_LEASE_SECONDS:
        return True
    _REFUSED[key] = now
    wake(run.id, total=1)  # one wake-up: whichever worker takes it
    return True
