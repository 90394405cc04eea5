"""Products per second end to end (queue -> worker -> PostgreSQL) beside the engine alone.

    .venv/bin/python manage.py bench_run --products 1000             # the demo catalog's products
    .venv/bin/python manage.py bench_run --catalog synthetic          # one synthetic schema

What it measures and how: tools/bench/run.py. Prints a small table and one JSON line; exits 1 when
the overhead is 15% or more.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.bench.run import MAX_OVERHEAD, bench_run


class Command(BaseCommand):
    help = "Benchmark a run end to end against the engine alone on the same products."

    def add_arguments(self, parser):
        parser.add_argument("--products", type=int, default=1000)
        parser.add_argument(
            "--batch-size", type=int, default=None, help=f"default {settings.EXTRACTION_BATCH_SIZE}"
        )
        parser.add_argument(
            "--stack", type=int, default=None, help="documents per HPD prompt (default: engine's choice)"
        )
        parser.add_argument("--decoder", choices=["hpd", "ar"], default="hpd")
        parser.add_argument(
            "--repeats", type=int, default=2, help="turns of engine-alone and end-to-end passes"
        )
        parser.add_argument("--timeout", type=float, default=3600)
        parser.add_argument(
            "--catalog",
            choices=["demo", "synthetic"],
            default="demo",
            help="the demo catalog's real products in 10 categories (default) or synthetic sneakers",
        )

    def handle(self, *args, products, batch_size, stack, decoder, repeats, timeout, catalog, **options):
        if products < 1:
            raise CommandError("--products must be at least 1")
        overhead = bench_run(
            products, batch_size, stack, decoder, repeats, timeout, catalog, self.stdout.write
        )
        if overhead >= MAX_OVERHEAD:
            raise SystemExit(1)
