"""Test and benchmark tooling, apart from the product: no app imports it.

- worker_processes: real Celery worker processes (the drill, the benchmarks and the tests start them)
- drill/: the fault drill (`manage.py fault_drill`) and the cluster drill (`manage.py cluster_drill`)
- bench/: the run benchmark (`bench_run`), the import benchmark (`bench_import`) and the review
  load benchmark (`make bench-load`: `python -m tools.bench.load`), and one point of the learning
  curve of a model that learns from its reviewers (`learning_curve`)
- management/commands/: the thin `manage.py` entry points (arguments, then one call)

It is a Django app only so that `manage.py` finds those commands: it has no models, views or URLs.
"""
