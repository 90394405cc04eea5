"""The cluster drill (tools/drill/cluster/): every Slotwise process on a host of its own.

    sudo .venv/bin/python manage.py cluster_drill [--products 80] [--batch-size 4] [--timeout 600]

Each host is a network namespace on a bridge the drill makes (private 10.x.y.0/24 addresses, no
route out) with its own mount and UTS namespaces (own /tmp, MEDIA_ROOT and model copy; the checkout
read-only): PostgreSQL, Redis, the web server, beat, a light worker and three GPU workers, reached
only over TCP on the bridge. Prints one JSON line per case and one of products/s; exits 1 when a
case lost, duplicated or failed anything, or its run page did not say what happened. Needs root
(ip netns, unshare); removes every namespace it made when it ends, is stopped (Ctrl-C, SIGTERM),
or, for a drill that was SIGKILLed, when the next one starts. Logs: .data/cluster-drill/.
"""

from django.core.management.base import BaseCommand, CommandError

from tools.drill.cluster.start import missing_requirement, run_cluster_drill


class Command(BaseCommand):
    help = "Run Slotwise on namespaced hosts; kill, cut off and restart them mid-run; report per case."

    def add_arguments(self, parser):
        parser.add_argument("--products", type=int, default=80)
        parser.add_argument("--batch-size", type=int, default=4)
        parser.add_argument("--timeout", type=float, default=600, help="seconds each run or wait may take")

    def handle(self, *args, products, batch_size, timeout, **options):
        if missing := missing_requirement():
            raise CommandError(missing)
        if products < 1 or batch_size < 1:
            raise CommandError("--products and --batch-size must be at least 1")
        if not run_cluster_drill(products, batch_size, timeout, self.stdout.write):
            raise SystemExit(1)
