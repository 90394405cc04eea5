"""The runner: what a worker process does with an extraction run or a training job, and only it.
For a run it leases a batch, decodes it with the engine, writes its values and opens their reviews;
for a job (runner/training/) it fine-tunes, proves and registers a model version.

It sits above the apps it writes to (catalog, extraction, review, training) and below
workers/, whose thin Celery task calls it (issue #32: no loop between apps, checked by
tests/test_architecture.py). The web side (extraction.services, the views) never imports it.

- loop: lease a batch, decode it, record it, until the run is over; a lost PostgreSQL is waited for.
  The wake-up it sends to other workers is a function the task passes in (no import of the task).
- leases: lease with SELECT ... FOR UPDATE SKIP LOCKED, record a batch in one transaction (its one
  hook, on_values_written, is None but in the fault drill's victim worker: tools/drill/write_pause.py)
- budget: how many products a batch takes: as many as their estimated decoding memory fits
  settings.EXTRACTION_MEMORY_BUDGET_MB (prompt positions, stacking)
- decoding: the only caller of the engine (one model per process, loaded lazily: no torch at import)
- failures: a model that could not be loaded, recorded on its run
- identity: a run decodes with copies of one model fingerprint; a worker with another copy refuses
- incidents: what interrupted a run and how it recovered, in the run page's words
- training/: a training job on a `train` worker (job: claim, fine-tune, checkpoint, register;
  evaluation: the held-back proof), decoding through runner.decoding
"""
