"""The fault drill's cases: each starts real workers and an HPD run, breaks something mid-run, waits
for the run to end and reports lost / duplicated values and what the run page says happened.

- kill_and_redis: a worker SIGKILLed right after it leased a batch, then Redis restarted.
- postgres_restart: PostgreSQL restarted (fast stop: every connection cut) while batches are decoded.
- kill_while_writing: a worker SIGKILLed inside its write transaction (values inserted, not committed).
- model_removed: the run's model directory deleted mid-run; a worker killed and its replacement
  cannot load the model; the workers that loaded it before finish the run.

Every case restarts only this checkout's servers (scripts/services.py checks whose they are).
"""

import html
import logging
import re
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.test import RequestFactory
from django_htmx.middleware import HtmxDetails

from accounts.roles import ADMIN
from catalog.models import Catalog
from extraction import drill, views
from extraction.models import ModelLoadFailure, Run, WorkItem
from extraction.services import RunRequest, do_start_run, kick_if_stalled
from extraction.worker import processes as worker_processes
from runner.leases import DRILL_WRITE_MARKER

log = logging.getLogger(__name__)

# Short leases so a killed worker's batch comes back within seconds, not the production default.
DRILL_LEASE_SECONDS = 8
POLL_SECONDS = 0.2
# The victim of kill_while_writing waits this long inside its write transaction: the drill's window.
WRITE_PAUSE_SECONDS = 60
DATABASE_ERRORS = (OperationalError, InterfaceError)
DRILL_ADMIN = "fault-drill"
PAGE_LINE = re.compile(r"<li>(.*?)</li>", re.S)
CASES = ("kill_and_redis", "postgres_restart", "kill_while_writing", "model_removed")


@dataclass
class Setup:
    catalog: Catalog
    workers: int
    batch_size: int
    model_dir: str
    log_dir: Path
    timeout: float


@dataclass
class Outcome:
    did: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    expect_on_page: str = ""  # words the run page must show about what happened
    error: str = ""  # why the case could not break the run as it meant to


class Case:
    """One drill case: start workers and a run, `disrupt` it, wait, tally, read the run page."""

    name = ""

    def __init__(self, setup: Setup):
        self.setup = setup
        self.pool: dict = {}
        self.outcome = Outcome()
        self.started = 0.0

    def worker_env(self, name: str) -> dict:
        return {"EXTRACTION_LEASE_SECONDS": str(DRILL_LEASE_SECONDS)}

    @property
    def model_dir(self) -> str:
        return self.setup.model_dir

    def start_worker(self, name: str):
        self.pool[name] = worker_processes.start_worker(name, self.setup.log_dir, self.worker_env(name))

    def run(self) -> dict:
        for i in range(1, self.setup.workers + 1):
            self.start_worker(f"{self.name}-w{i}")
        try:
            self.started = time.monotonic()
            run = do_start_run(
                RunRequest(
                    decoder="hpd",
                    catalog=self.setup.catalog,
                    batch_size=self.setup.batch_size,
                    model_dir=self.model_dir,
                    name=f"Fault drill: {self.name}",
                )
            )[0]
            try:
                self.disrupt(run)
            except (TimeoutError, *DATABASE_ERRORS) as exc:
                # The break did not happen as planned: the run still ends, and the line says why.
                self.outcome.error = f"{type(exc).__name__}: {exc}"
            run = self.wait(run)
            seconds = time.monotonic() - self.started
        finally:
            for proc in self.pool.values():
                worker_processes.stop_worker(proc)
            self.cleanup()
        result = {"case": self.name, **drill.tally(run, seconds).as_dict(), "run": run.id}
        if run.status != Run.Status.DONE:
            self.outcome.notes.append(f"run {run.id} ended {run.status}: {run.error or 'timed out'}")
        page = run_page_lines(run)
        said = any(self.outcome.expect_on_page in line for line in page)
        result.update(
            status=run.status,
            workers=self.setup.workers,
            **self.outcome.did,
            run_page=page,
            page_says_what_happened=said,
            notes="; ".join(self.outcome.notes),
            error=self.outcome.error,
        )
        result["ok"] = (
            not result["lost"]
            and not result["duplicated"]
            and run.status == Run.Status.DONE
            and said
            and not self.outcome.error
        )
        return result

    def disrupt(self, run: Run) -> None:
        raise NotImplementedError

    def cleanup(self) -> None:
        """Undo what the case changed outside the database (a removed model copy, say)."""

    # --- helpers the cases share ------------------------------------------------------------

    def deadline(self) -> float:
        return self.started + self.setup.timeout

    def wait_for(self, what: str, predicate):
        """Poll `predicate` (it may find PostgreSQL away for a moment) until it returns something."""
        while time.monotonic() < self.deadline():
            try:
                found = predicate()
            except DATABASE_ERRORS:
                connection.close()
                found = None
            if found:
                return found
            time.sleep(POLL_SECONDS)
        raise TimeoutError(
            f"{self.name}: no {what} within {self.setup.timeout:.0f}s; see {self.setup.log_dir}/*.log"
        )

    def lease_holder(self, run: Run, among=None) -> str | None:
        """The owner of a live lease of this run, when it is one of our workers (or of `among`)."""
        names = among or self.pool
        for owner in (
            WorkItem.objects.filter(run=run, status=WorkItem.Status.LEASED)
            .values_list("lease_owner", flat=True)
            .distinct()
        ):
            if owner.split("@")[0] in names:
                return owner
        return None

    def kill(self, owner: str) -> str:
        worker_processes.kill_worker(self.pool.pop(owner.split("@")[0]))
        return owner

    def replace_if_alone(self) -> None:
        if not self.pool:
            # Nobody would be left: a supervisor restarts it, as systemd or Kubernetes would.
            self.start_worker(f"{self.name}-spare")
            self.outcome.notes.append("the only worker was killed; a replacement was started")

    def wait(self, run: Run) -> Run:
        while time.monotonic() < self.deadline():
            try:
                run.refresh_from_db()
                if not run.is_active:
                    return run
                kick_if_stalled(run)  # as beat's reaper does: a wake-up lost with Redis is sent again
            except DATABASE_ERRORS:
                connection.close()
            time.sleep(1)
        return run


class KillAndRedis(Case):
    """A worker SIGKILLed right after it took a batch, then Redis restarted (messages lost)."""

    name = "kill_and_redis"

    def disrupt(self, run: Run) -> None:
        self.outcome.did["killed"] = self.kill(self.wait_for("lease", lambda: self.lease_holder(run)))
        self.outcome.expect_on_page = "had expired"
        self.replace_if_alone()
        restarted = drill.redis_is_local()
        if restarted:
            drill.restart_redis()
        else:
            self.outcome.notes.append(
                f"REDIS_URL {settings.REDIS_URL} is not this checkout's Redis: not restarted"
            )
        self.outcome.did["redis_restarted"] = restarted


class PostgresRestart(Case):
    """PostgreSQL restarted while the workers hold leases: every connection is cut mid-batch."""

    name = "postgres_restart"

    def disrupt(self, run: Run) -> None:
        if not drill.postgres_is_local():
            self.outcome.notes.append("DATABASE_URL is not this checkout's PostgreSQL: not restarted")
            self.outcome.did["postgres_restarted"] = False
            return
        self.wait_for("lease", lambda: self.lease_holder(run))
        connection.close()
        down = time.monotonic()
        drill.restart_postgres()
        self.outcome.did.update(postgres_restarted=True, restart_seconds=round(time.monotonic() - down, 1))
        self.outcome.expect_on_page = "lost its PostgreSQL connection"


class KillWhileWriting(Case):
    """A worker SIGKILLed inside record_results' transaction: its values are inserted, not committed."""

    name = "kill_while_writing"

    def victim(self) -> str:
        return f"{self.name}-w1"

    def worker_env(self, name: str) -> dict:
        env = super().worker_env(name)
        if name == self.victim():
            env["EXTRACTION_DRILL_WRITE_PAUSE_SECONDS"] = str(WRITE_PAUSE_SECONDS)
        return env

    def disrupt(self, run: Run) -> None:
        self.wait_for("write transaction held open", self.open_write_transaction)
        owner = self.wait_for("victim's lease", lambda: self.lease_holder(run, among={self.victim()}))
        products = WorkItem.objects.filter(run=run, lease_owner=owner, status=WorkItem.Status.LEASED).count()
        self.outcome.did.update(
            killed=self.kill(owner),
            killed_while=f"writing the values of {products} products (transaction open, not committed)",
        )
        self.outcome.expect_on_page = "had expired"
        self.replace_if_alone()

    def open_write_transaction(self) -> bool:
        """The victim's connection inside its write transaction: the worker names it with the drill's
        marker for that transaction only (leases.DRILL_WRITE_MARKER), whatever statement came last."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_stat_activity WHERE application_name = %s AND state = 'idle in transaction'",
                [DRILL_WRITE_MARKER],
            )
            return cursor.fetchone() is not None


class ModelRemoved(Case):
    """The run's model directory deleted mid-run (a copy of the drill's model, never the original)."""

    name = "model_removed"

    def __init__(self, setup: Setup):
        super().__init__(setup)
        self.copy = setup.log_dir / f"model-copy-{int(time.time())}"
        shutil.copytree(setup.model_dir, self.copy)

    @property
    def model_dir(self) -> str:
        return str(self.copy)

    def disrupt(self, run: Run) -> None:
        # Every worker loads the model before it leases: once each has held a lease, all have it.
        self.wait_for("every worker leasing", lambda: self.lease_owners(run) >= set(self.pool))
        shutil.rmtree(self.copy)
        self.outcome.did["model_removed"] = str(self.copy)
        if len(self.pool) > 1:
            self.outcome.did["killed"] = self.kill(self.wait_for("lease", lambda: self.lease_holder(run)))
        survivors = list(self.pool.values())
        # Hold the survivors still until the replacement has tried the model, however fast they are:
        # otherwise they may finish the run before it starts and nobody meets the missing model.
        for proc in survivors:
            worker_processes.signal_worker(proc, signal.SIGSTOP)
        try:
            self.start_worker(f"{self.name}-replacement")
            self.wait_for("load failure", lambda: ModelLoadFailure.objects.filter(run=run).exists())
        finally:
            for proc in survivors:
                worker_processes.signal_worker(proc, signal.SIGCONT)
        self.outcome.expect_on_page = "could not load model"

    def lease_owners(self, run: Run) -> set[str]:
        owners = (
            WorkItem.objects.filter(run=run).exclude(lease_owner="").values_list("lease_owner", flat=True)
        )
        done_by = WorkItem.objects.filter(run=run).exclude(done_by="").values_list("done_by", flat=True)
        return {owner.split("@")[0] for owner in [*owners, *done_by]}

    def cleanup(self) -> None:
        shutil.rmtree(self.copy, ignore_errors=True)


CASE_CLASSES = {cls.name: cls for cls in (KillAndRedis, PostgresRestart, KillWhileWriting, ModelRemoved)}


def run_page_lines(run: Run) -> list[str]:
    """What the run page (as an admin sees it) lists under what happened and the failed loads."""
    close_old_connections()
    admin, _ = User.objects.get_or_create(username=DRILL_ADMIN, defaults={"is_staff": True})
    admin.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
    # The page's own view, called as a signed-in admin's request (no session or sign-in needed).
    request = RequestFactory().get(f"/runs/{run.id}/", HTTP_HOST="localhost")
    request.user, request.htmx = admin, HtmxDetails(request)
    page = views.detail(request, run_id=run.id)
    text = page.content.decode()
    lines = []
    for block_id in ("run-incidents", "run-load-failures"):
        start = text.find(f'id="{block_id}"')
        if start >= 0:
            end = (
                text.find("</div>", start) if block_id == "run-incidents" else text.find("</details>", start)
            )
            for item in PAGE_LINE.findall(text[start : end if end > 0 else None]):
                lines.append(html.unescape(re.sub(r"<[^>]+>", "", item)).strip())
    if page.status_code != 200:
        lines.append(f"(the run page answered {page.status_code})")
    return lines
