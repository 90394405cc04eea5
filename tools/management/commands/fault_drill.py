"""The fault drill: real workers and HPD runs, each case breaking something mid-run.

    .venv/bin/python manage.py fault_drill --products 200 --workers 2 [--cases a,b] [--model DIR]

Cases (tools/drill/cases.py): kill_and_redis (a worker SIGKILLed mid-batch, Redis restarted),
postgres_restart, kill_while_writing (SIGKILL inside the write transaction), model_removed (the
model directory deleted mid-run). Prints ONE JSON line per case: case, products, values_expected,
values_stored, lost, duplicated, failed, seconds, what the drill did, run_page (what the run page
says happened), page_says_what_happened, error, ok. Exits 1 when a case lost or duplicated
anything, its run did not finish, its run page does not say what happened, or it broke (the drill
itself: tools/drill/fault.py). Worker logs go to .data/drill/.

It restarts only this checkout's PostgreSQL and Redis (scripts/services.py checks whose they are):
run it in a checkout of its own, never beside servers others use. The model defaults to the small
fast models/slotwise-ave.
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from tools.drill.cases import CASES
from tools.drill.fault import run_fault_drill, unknown_cases


class Command(BaseCommand):
    help = "Break workers, PostgreSQL, Redis and the model mid-run; report lost / duplicated values per case."

    def add_arguments(self, parser):
        parser.add_argument("--products", type=int, default=200)
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument(
            "--batch-size", type=int, default=None, help="products per lease (default: N/(8W), 2..16)"
        )
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for each run")
        parser.add_argument(
            "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}"
        )
        parser.add_argument("--model", default=settings.FAST_MODEL_DIR, help="model directory the runs use")

    def handle(self, *args, products, workers, batch_size, timeout, cases, model, **options):
        if products < 1 or workers < 1:
            raise CommandError("--products and --workers must be at least 1")
        chosen = [name.strip() for name in cases.split(",") if name.strip()]
        if unknown := unknown_cases(chosen):
            raise CommandError(f"--cases: {', '.join(unknown)} not among {', '.join(CASES)}")
        if run_fault_drill(products, workers, batch_size, timeout, chosen, model, self.stdout.write):
            raise SystemExit(1)
