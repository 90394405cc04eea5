"""Benchmark the CSV import: generate a CSV, import it through the real path, print rows/s and memory.

    manage.py bench_import --rows 100000

How: tools/bench/imports.py. The bench catalog is deleted afterwards unless --keep is given.
"""

from django.core.management.base import BaseCommand

from tools.bench.imports import bench_import


class Command(BaseCommand):
    help = "Generate a CSV of --rows products and time its import (goal: >= 5,000 rows/s, < 1 GiB peak)."

    def add_arguments(self, parser):
        parser.add_argument("--rows", type=int, default=100_000)
        parser.add_argument("--keep", action="store_true", help="keep the bench catalog and its products")

    def handle(self, *args, rows: int, keep: bool, **options):
        bench_import(rows, keep, self.stdout.write, self.stderr.write)
