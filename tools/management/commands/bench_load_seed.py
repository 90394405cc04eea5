"""Build the review load benchmark's data directly in the database (no model decoding).

    manage.py bench_load_seed --products 5000 --users 50 --password PASSWORD

A catalog of PRODUCTS products (4 attributes each, so 4 x PRODUCTS values) with one finished HPD
run, and USERS reviewers bench-reviewer-001... sharing PASSWORD. Replaces an earlier seed. Refuses a
database whose name does not end in "bench": the benchmark never writes a dev database.
"""

import json

from django.core.management.base import BaseCommand, CommandError

from tools.bench.load.data import refuse_unless_bench_database, seed


class Command(BaseCommand):
    help = "Seed the review load benchmark: products, one finished run's values, reviewer users."

    def add_arguments(self, parser):
        parser.add_argument("--products", type=int, default=5000)
        parser.add_argument("--users", type=int, default=50)
        parser.add_argument("--password", required=True)

    def handle(self, *args, products: int, users: int, password: str, **options):
        refuse_unless_bench_database()
        if products < 1 or users < 1:
            raise CommandError("--products and --users must be at least 1")
        self.stdout.write(json.dumps(seed(products, users, password).__dict__))
