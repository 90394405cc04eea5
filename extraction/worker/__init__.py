"""The worker side of extraction: what a GPU worker process runs, and only it.

- loop: lease a batch, decode it, record it, until the run is over; a lost PostgreSQL is waited for
- leases: lease with SELECT ... FOR UPDATE SKIP LOCKED, record a batch in one transaction
- decoding: the only caller of the engine (one model per process, loaded lazily: no torch at import)
- failures: a model that could not be loaded, recorded on its run
- identity: a run decodes with copies of one model fingerprint; a worker with another copy refuses
- incidents: what interrupted a run and how it recovered, in the run page's words
- processes: real Celery worker processes for the fault drill, the benchmark and the tests

The web side (extraction.services) only enqueues: it never imports this package.
"""
