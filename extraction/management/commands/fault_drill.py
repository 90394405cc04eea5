"""The fault drill: real workers, an HPD run, one worker SIGKILLed mid-batch, Redis restarted once.

    .venv/bin/python manage.py fault_drill --products 200 --workers 2

Prints ONE JSON line: products, values_expected, values_stored, lost, duplicated, failed, seconds
(then what the drill did: workers, killed, redis_restarted, notes). Exits 1 when anything was lost
or duplicated, or the run did not finish. Worker logs go to .data/drill/.
"""

import json
import logging
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from extraction import drill, worker_processes
from extraction.models import Run, WorkItem
from extraction.services import RunRequest, do_start_run, kick_if_stalled

log = logging.getLogger(__name__)

# Short leases so the killed worker's batch comes back within seconds, not the production default.
DRILL_LEASE_SECONDS = 8
POLL_SECONDS = 0.2


class Command(BaseCommand):
    help = "Kill a worker mid-batch and restart Redis during an HPD run; report lost / duplicated values."

    def add_arguments(self, parser):
        parser.add_argument("--products", type=int, default=200)
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument(
            "--batch-size", type=int, default=None, help="products per lease (default: N/(8W), 2..16)"
        )
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the run")

    def handle(self, *args, products: int, workers: int, batch_size: int | None, timeout: float, **options):
        if products < 1 or workers < 1:
            raise CommandError("--products and --workers must be at least 1")
        batch_size = batch_size or max(2, min(16, products // (8 * workers)))
        catalog = drill.drill_catalog(f"Fault drill ({products} products)", products)
        log_dir = settings.BASE_DIR / ".data" / "drill"
        env = {"EXTRACTION_LEASE_SECONDS": str(DRILL_LEASE_SECONDS)}
        pool = {
            f"drill-w{i}": worker_processes.start_worker(f"drill-w{i}", log_dir, env)
            for i in range(1, workers + 1)
        }
        notes: list[str] = []
        killed = None
        redis_restarted = False
        try:
            started = time.monotonic()
            run = do_start_run(
                RunRequest(decoder="hpd", catalog=catalog, batch_size=batch_size, name="Fault drill")
            )[0]
            killed = self._kill_one_mid_batch(run, pool, timeout)
            if workers == 1:
                # Nobody would be left: a supervisor restarts it, as systemd or Kubernetes would.
                pool["drill-w1b"] = worker_processes.start_worker("drill-w1b", log_dir, env)
                notes.append("the only worker was killed; a replacement was started")
            if drill.redis_is_local():
                drill.restart_redis()
                redis_restarted = True
            else:
                notes.append(
                    f"REDIS_URL {settings.REDIS_URL} is not the local Redis of scripts/services.py: not restarted"
                )
            run = self._wait(run, started + timeout)
            seconds = time.monotonic() - started
        finally:
            for proc in pool.values():
                worker_processes.stop_worker(proc)
        result = drill.tally(run, seconds).as_dict()
        if run.status != Run.Status.DONE:
            notes.append(f"run {run.id} ended {run.status}: {run.error or 'timed out'}")
        result.update(
            run=run.id,
            workers=workers,
            killed=killed,
            redis_restarted=redis_restarted,
            notes="; ".join(notes),
        )
        self.stdout.write(json.dumps(result))
        if result["lost"] or result["duplicated"] or run.status != Run.Status.DONE:
            raise SystemExit(1)

    def _kill_one_mid_batch(self, run: Run, pool: dict, timeout: float) -> str:
        """SIGKILL the worker that holds a live lease on this run, right after it took the batch."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            owner = (
                WorkItem.objects.filter(run=run, status=WorkItem.Status.LEASED)
                .values_list("lease_owner", flat=True)
                .first()
            )
            name = owner.split("@")[0] if owner else None
            if name in pool:
                worker_processes.kill_worker(pool.pop(name))
                return owner
            time.sleep(POLL_SECONDS)
        raise CommandError(
            f"no worker leased a batch of run {run.id} within {timeout:.0f}s; see .data/drill/*.log"
        )

    def _wait(self, run: Run, deadline: float) -> Run:
        while time.monotonic() < deadline:
            run.refresh_from_db()
            if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
                return run
            kick_if_stalled(run)  # as the run page does: a wake-up lost with Redis is sent again
            time.sleep(1)
        return run
