"""The cluster drill: Slotwise on hosts of their own, a catalog uploaded over HTTP, HPD runs broken
three ways, and the speed on one, two and three GPU hosts.

    db (PostgreSQL) . redis . web (gunicorn) . beat . light (import worker) . gpu1 gpu2 gpu3

Cases, one run each, all three GPU hosts up at its start:
- gpu_host_killed: every process of a GPU host SIGKILLed while it holds a lease.
- gpu_host_cut_off: a GPU host holding a lease loses its link at the switch for longer than a lease
  (2 x EXTRACTION_LEASE_SECONDS + 4 s), then gets it back: its batch is taken over meanwhile, and
  its own late write is refused.
- redis_restarted: Redis killed and started again mid-run (every queued message lost).
Each prints one JSON line: products, values_expected, values_stored, lost, duplicated, failed,
seconds, what the drill did, what the run page said happened (run_page), ok. Then one line with
products/s on 3, 2 and 1 GPU hosts (one host stopped after the other, the rest warm).
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.db import connections

from accounts.roles import ADMIN
from catalog.models import ImportJob
from extraction.models import Run, WorkItem
from tools.drill.catalog import DRILL_CATEGORY, drill_category, synthetic_titles
from tools.drill.cluster.browser import Browser
from tools.drill.cluster.hosts import DATABASE, PG_PORT, Cluster
from tools.drill.cluster.network import Network, remove_leftovers
from tools.drill.tally import tally

LEASE_SECONDS = 8
REAPER_SECONDS = 4
CUT_SECONDS = 2 * LEASE_SECONDS + 4
REDIS_DOWN_SECONDS = 3
LATE_WRITE_WAIT_SECONDS = 90
GPU_HOSTS = ("gpu1", "gpu2", "gpu3")
ADDRESSES = {"db": 2, "redis": 3, "web": 10, "beat": 11, "light": 12, "gpu1": 21, "gpu2": 22, "gpu3": 23}
DRILL_USER = "cluster-drill"
READY = b" ready."
LATE_WRITE_REFUSED = b"were taken over before recording"  # runner/loop.py's warning
POLL_SECONDS = 0.3


@dataclass
class Options:
    products: int
    batch_size: int
    timeout: float  # seconds a run (or a wait inside a case) may take
    log_dir: Path
    model_dir: Path
    repo: Path


class Drill:
    def __init__(self, options: Options, say):
        self.options, self.say = options, say
        self.password = secrets.token_urlsafe(16)

    # --- the whole drill ------------------------------------------------------------------------

    def run(self) -> bool:
        left = remove_leftovers()
        if left:
            self.say(json.dumps({"removed_leftovers": left}))
        with Network() as network:
            self.cluster = Cluster(
                network, self.options.repo, self.options.log_dir, self.options.model_dir,
                settings={"EXTRACTION_LEASE_SECONDS": str(LEASE_SECONDS),
                          "REAPER_INTERVAL_SECONDS": str(REAPER_SECONDS), "OMP_NUM_THREADS": "1"},
            )  # fmt: skip
            self.boot(network)
            catalog_id = self.import_catalog()
            results = [
                self.case("gpu_host_killed", self.kill_gpu_host, "had expired", catalog_id),
                self.case("gpu_host_cut_off", self.cut_gpu_host_off, "had expired", catalog_id),
                self.case("redis_restarted", self.restart_redis, "", catalog_id),
            ]
            self.say(json.dumps(self.throughput(catalog_id)))
        return all(result["ok"] for result in results)

    def boot(self, network: Network) -> None:
        for host, index in ADDRESSES.items():
            network.add_host(host, index)
        cluster = self.cluster
        cluster.start_postgres()
        self.use_drill_database(network.hosts["db"])
        cluster.start_redis()
        cluster.start_web()
        cluster.start_worker("light", "light")
        cluster.start_beat()
        self.ensure_gpu_hosts(GPU_HOSTS)
        self.browser = Browser(cluster.web_url)
        self.browser.wait_until_up()
        self.browser.sign_in(DRILL_USER, self.password)

    def use_drill_database(self, address: str) -> None:
        """Point this process's ORM at the drill's PostgreSQL (over the bridge), migrate it, and make
        the drill's admin and its category's schema (set up before any user comes)."""
        self.wait_for("PostgreSQL to accept connections", lambda: self._create_database(address))
        db = connections["default"]
        db.close()
        db.settings_dict.update(HOST=address, PORT=PG_PORT, NAME=DATABASE, USER="postgres", PASSWORD="")
        call_command("migrate", verbosity=0, interactive=False)
        admin = User.objects.create_user(DRILL_USER, password=self.password)
        admin.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
        drill_category()

    @staticmethod
    def _create_database(address: str) -> bool:
        try:
            with psycopg.connect(
                host=address, port=PG_PORT, user="postgres", dbname="postgres", autocommit=True
            ) as c:
                c.execute(f"CREATE DATABASE {DATABASE}")
        except psycopg.OperationalError:  # the port answers before the server is ready
            return False
        return True

    def import_catalog(self) -> int:
        rows = [f"CD-{i:05d},{title},{DRILL_CATEGORY}" for i, title in
                zip(range(self.options.products), synthetic_titles(), strict=False)]  # fmt: skip
        content = ("sku,title,category\n" + "\n".join(rows) + "\n").encode()
        job_id = self.browser.upload("drill-catalog.csv", content, "Cluster drill")
        self.browser.map_and_start(job_id, {"sku": "0", "title": "1", "description": "", "category": "2",
                                            "fixed_category": "", "known_0": "", "known_1": "", "known_2": ""})  # fmt: skip
        job = self.wait_for("the import on the light host", lambda: self._finished_import(job_id))
        if job.status != ImportJob.Status.DONE or job.created_count != self.options.products:
            raise RuntimeError(
                f"the import ended {job.status} with {job.created_count} products: {job.message}"
            )
        return job.catalog_id

    @staticmethod
    def _finished_import(job_id: int):
        job = ImportJob.objects.get(pk=job_id)
        return job if job.is_finished else None

    # --- hosts ----------------------------------------------------------------------------------

    def _log_count(self, host: str, text: bytes) -> int:
        log = self.options.log_dir / f"{host}.log"
        return log.read_bytes().count(text) if log.is_file() else 0

    def ensure_gpu_hosts(self, hosts) -> None:
        """Each named GPU host running (started afresh if it was killed); the others stopped."""
        for host in GPU_HOSTS:
            alive = host in self.cluster.processes and self.cluster.processes[host].poll() is None
            if host not in hosts and alive:
                self.cluster.kill(host)
            elif host in hosts and not alive:
                before = self._log_count(host, READY)
                self.cluster.start_worker(host, "gpu")
                self.wait_for(
                    f"{host}'s worker", lambda host=host, before=before: self._log_count(host, READY) > before
                )

    def lease_holder(self, run_id: int) -> str | None:
        """A GPU host that holds a live lease of the run."""
        owners = WorkItem.objects.filter(run_id=run_id, status=WorkItem.Status.LEASED).values_list(
            "lease_owner", flat=True
        )
        for owner in owners:
            host = owner.split("@", 1)[-1].split("/", 1)[0]
            if host in GPU_HOSTS and self.cluster.processes.get(host):
                return host
        return None

    # --- cases ----------------------------------------------------------------------------------

    def case(self, name: str, disrupt, expect: str, catalog_id: int) -> dict:
        self.ensure_gpu_hosts(GPU_HOSTS)
        started = time.monotonic()
        run_id = self.browser.start_run(catalog_id, self.options.batch_size, f"Cluster drill: {name}")
        did = disrupt(run_id)
        run = self.wait_for_run(run_id)
        result = {"case": name, **tally(run, time.monotonic() - started).as_dict(), "run": run_id,
                  "status": run.status, **did}  # fmt: skip
        page = self.browser.run_page_lines(run_id)
        said = any(expect in line for line in page) if expect else True
        result.update(run_page=page, page_says_what_happened=said)
        result["ok"] = (
            run.status == Run.Status.DONE
            and said
            and not (result["lost"] or result["duplicated"] or result["failed"])
        )
        self.say(json.dumps(result))
        return result

    def kill_gpu_host(self, run_id: int) -> dict:
        victim = self.wait_for("a GPU host holding a lease", lambda: self.lease_holder(run_id))
        return {"killed_host": victim, "processes_killed": self.cluster.kill(victim)}

    def cut_gpu_host_off(self, run_id: int) -> dict:
        victim = self.wait_for("a GPU host holding a lease", lambda: self.lease_holder(run_id))
        refused_before = self._log_count(victim, LATE_WRITE_REFUSED)
        self.cluster.network.set_link(victim, up=False)
        try:
            time.sleep(CUT_SECONDS)
        finally:
            self.cluster.network.set_link(victim, up=True)
        # Back on the network (TCP retries back off, so it may take a while), it finds its batch taken
        # over and writes none of it: its log says so.
        deadline = time.monotonic() + LATE_WRITE_WAIT_SECONDS
        while self._log_count(victim, LATE_WRITE_REFUSED) == refused_before and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
        return {
            "cut_off_host": victim,
            "seconds_off": CUT_SECONDS,
            "lease_seconds": LEASE_SECONDS,
            "its_late_write_refused": self._log_count(victim, LATE_WRITE_REFUSED) > refused_before,
        }

    def restart_redis(self, run_id: int) -> dict:
        self.wait_for(
            "a first batch written", lambda: WorkItem.objects.filter(run_id=run_id, status="done").exists()
        )
        self.cluster.kill("redis")
        time.sleep(REDIS_DOWN_SECONDS)
        self.cluster.start_redis()
        return {"redis_restarted": True, "redis_down_seconds": REDIS_DOWN_SECONDS}

    def throughput(self, catalog_id: int) -> dict:
        """Products/s of one run on 3, then 2, then 1 GPU hosts (stopped one by one; the rest warm)."""
        speeds = {}
        for count in (3, 2, 1):
            self.ensure_gpu_hosts(GPU_HOSTS[:count])
            run_id = self.browser.start_run(
                catalog_id, self.options.batch_size, f"Cluster drill: {count} GPU hosts"
            )
            run = self.wait_for_run(run_id)
            seconds = (run.finished_at - run.created_at).total_seconds() if run.finished_at else float("nan")
            speeds[f"gpu_hosts_{count}"] = (
                round(run.done / seconds, 2) if run.status == Run.Status.DONE else None
            )
        return {
            "products_per_second": dict(sorted(speeds.items())),
            "products": self.options.products,
            "note": "every host shares this machine's CPU cores (one torch thread per GPU host): "
            "this shows correctness more than speed",
        }

    # --- waiting, bounded -----------------------------------------------------------------------

    def wait_for(self, what: str, predicate):
        deadline = time.monotonic() + self.options.timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            time.sleep(POLL_SECONDS)
        raise TimeoutError(f"no {what} within {self.options.timeout:.0f}s; logs in {self.options.log_dir}")

    def wait_for_run(self, run_id: int) -> Run:
        deadline = time.monotonic() + self.options.timeout
        while time.monotonic() < deadline:
            run = Run.objects.get(pk=run_id)
            if not run.is_active:
                return run
            time.sleep(1)
        return Run.objects.get(pk=run_id)
