"""The worker side of extraction: what a GPU worker process runs, and only it.

- loop: lease a batch, decode it, record it, until the run is over; a lost PostgreSQL is waited for
- leases: lease with SELECT ... FOR UPDATE SKIP LOCKED, record a batch in one transaction (its one
  hook, on_values_written, is None but in the fault drill's victim worker: tools/drill/write_pause.py)
- decoding: the only caller of the engine (one model per process, loaded lazily: no torch at import)
- failures: a model that could not be loaded, recorded on its run
- identity: a run decodes with copies of one model fingerprint; a worker with another copy refuses
- incidents: what interrupted a run and how it recovered, in the run page's words

The web side (extraction.services) only enqueues: it never imports this package.
"""
