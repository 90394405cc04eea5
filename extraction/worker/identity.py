"""One run, one model: the run decodes with the copy of its model that the first worker loaded, by
fingerprint (extraction/engine/fingerprint.py), whichever machine each worker runs on.

A worker whose copy has another fingerprint (other weights under the same path, another
slotwise.json, another precision) leases nothing: the run page says so (an incident) and the
wake-up goes out again so that another worker takes the run's batches.
"""

import logging

from extraction.models import Run
from extraction.services import kick_run
from extraction.worker import incidents

log = logging.getLogger(__name__)

# (run, fingerprint) pairs this process refused already: one incident and one wake-up each, so a
# worker that receives its own wake-up again does not spin or fill the run page.
_REFUSED: set[tuple[int, str]] = set()


def run_fingerprint(run_id: int, fingerprint: str) -> str | None:
    """The run's fingerprint, `fingerprint` if it had none yet (None: the run is gone). The update
    is conditional, so of two workers starting at once exactly one sets it."""
    Run.objects.filter(pk=run_id, model_fingerprint="").update(model_fingerprint=fingerprint)
    return Run.objects.filter(pk=run_id).values_list("model_fingerprint", flat=True).first()


def refuses(run: Run, owner: str, fingerprint: str, model: str) -> bool:
    """True when this worker's copy of the run's model is not the one the run decodes with."""
    pinned = run_fingerprint(run.id, fingerprint)
    if pinned is None or pinned == fingerprint:
        return False
    if (run.id, fingerprint) not in _REFUSED:
        _REFUSED.add((run.id, fingerprint))
        log.warning(
            "run %s decodes with model %s, this worker has %s: left to others", run.id, pinned, fingerprint
        )
        incidents.model_mismatch(run.id, owner, model or run.model_dir or "(bundled)", fingerprint, pinned)
        kick_run(run.id)
    return True
