"""Real Celery worker processes for the fault drill, the benchmark and the tests (processes.py).

What a GPU worker runs with a run moved to the top-level runner/ package (issue #32).
"""
