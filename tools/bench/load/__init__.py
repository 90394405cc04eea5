"""The review queue under load (`make bench-load`, `python -m tools.bench.load`): its data and check
(data), the run around gunicorn and locust (__main__), the simulated reviewers (locustfile)."""
