"""The worker loop over one run: lease a batch, decode it, record it, until no work is left.

Runs inside a Celery task on the GPU queue. While it decodes, a heartbeat thread renews the batch's
lease, so leases can stay short and a killed worker's products come back quickly. When the run has
nothing takeable but other workers still hold leases, the loop waits for them to finish or expire
(a dead worker's lease expires and is taken here), so a run always finishes while one worker lives.

Waking other workers for a run goes through `wake`, a function the Celery task passes in
(workers.tasks.wake_run, which sends that same task): the loop that a wake-up starts and the wake-up
it sends meet in the task module, explicitly, and this package imports no task (issue #32).
"""

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from extraction.models import Run
from extraction.sizes import sizes_of
from runner import decoding, identity, incidents
from runner.budget import MB, BatchBudget
from runner.failures import do_record_load_failure
from runner.leases import (
    ItemOutcome,
    cancel_own_leases,
    lease_batch,
    next_run_with_takeable_work,
    record_results,
    release_own_leases,
    renew_leases,
    set_model,
    why_nothing_to_lease,
)

log = logging.getLogger(__name__)

# Wakes workers for a run: (run_id, total=None) -> whether the messages went out (extraction.services.kick_run's shape).
Wake = Callable[..., bool]

# Upper bound on one idle wait, so a cancelled or finished run is noticed soon.
MAX_IDLE_WAIT_SECONDS = 5.0
# How often a decoding batch asks whether its run was cancelled (between forward steps).
CANCEL_CHECK_SECONDS = 1.0
# What a PostgreSQL restart or a dropped connection raises.
DATABASE_ERRORS = (OperationalError, InterfaceError)
RECONNECT_INTERVAL_SECONDS = 1.0


class LeaseHeartbeat:
    """Renews a batch's leases every third of the lease time while the engine works on it."""

    def __init__(self, item_ids: list[int], owner: str, lease_seconds: int):
        self.item_ids, self.owner, self.lease_seconds = item_ids, owner, lease_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.lease_seconds / 3):
                try:
                    renew_leases(self.item_ids, self.owner, self.lease_seconds)
                except DATABASE_ERRORS:
                    connection.close()  # PostgreSQL is away: a new connection at the next beat
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def process_runs(run_id: int | None, owner: str, wake: Wake, seconds: float | None = None) -> int | None:
    """Work on run_id, then on any other run with takeable work (its wake-up may have been lost).

    Stops between batches once `seconds` have passed and returns the run to continue with (the
    task sends itself again for it), so a warm shutdown waits one slice, not a whole run, and runs
    queued meanwhile get their turn. None: no work is left. `wake` passes a run on to other workers.
    """
    until = time.monotonic() + (seconds or settings.EXTRACTION_TASK_SECONDS)
    worked: set[int] = set()
    current = run_id if run_id is not None else next_run_with_takeable_work(exclude=worked)
    while current is not None:
        if not process_run(current, owner, wake, until):
            return current
        worked.add(current)
        current = next_run_with_takeable_work(exclude=worked)
    return None


def hand_back_after_load_failure(run: Run, owner: str, error: str, wake: Wake) -> None:
    """The model is loaded before anything is leased, so this worker holds no lease of the run: its
    items stay queued. The failure is shown on the run page and, unless that was the last failure
    allowed (the run then fails), the wake-up is sent again so another idle worker takes the run."""
    if do_record_load_failure(run.id, owner, run.model_dir, error):
        wake(run.id)


def wait_for_database() -> float:
    """Reconnect until PostgreSQL answers; returns the seconds it took. Raises the last error after
    settings.EXTRACTION_DATABASE_WAIT_SECONDS (the task is then retried by Celery)."""
    started = time.monotonic()
    while True:
        connection.close()
        try:
            connection.ensure_connection()
            return time.monotonic() - started
        except DATABASE_ERRORS:
            if time.monotonic() - started > settings.EXTRACTION_DATABASE_WAIT_SECONDS:
                raise
            time.sleep(RECONNECT_INTERVAL_SECONDS)


def recover_from_database_loss(run_id: int, owner: str, item_ids: list[int], exc: Exception) -> None:
    """PostgreSQL went away mid-batch (restarted, or the connection dropped): wait for it, hand back
    the batch whose write did not go through (a write that did commit left its items done, which
    this leaves alone), and say so on the run page."""
    log.warning("run %s: lost PostgreSQL (%s); reconnecting", run_id, exc)
    seconds = wait_for_database()
    released = release_own_leases(item_ids, owner) if item_ids else 0
    incidents.database_lost(run_id, owner, f"{type(exc).__name__}: {exc}", seconds, released)


def process_run(run_id: int, owner: str, wake: Wake, until: float = float("inf")) -> bool:
    """Lease, decode and record batches of the run until it is over (True) or `until` (False)."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None or not run.is_active:
        return True
    device = settings.SLOTWISE_DEVICE
    set_phase(run_id, Run.Phase.LOADING)
    try:
        extractor = decoding.extractor_for(run.model_dir, device)
    except decoding.LoadFailedRecently:
        return True  # this process failed on the model moments ago: leave the run to other workers
    except Exception as exc:  # noqa: BLE001 - any load failure is shown on the run, which waits for another worker
        log.exception("run %s: model %r could not be loaded", run_id, run.model_dir)
        hand_back_after_load_failure(run, owner, f"{type(exc).__name__}: {exc}", wake)
        return True
    fingerprint = decoding.fingerprint_for(run.model_dir, device)
    if identity.refuses(run, owner, fingerprint, extractor.model_name, wake):
        return True  # another copy of the model decodes this run; the run page says why
    set_model(
        run_id,
        extractor.model_name,
        extractor.model_revision,
        {
            "device": device,
            "extractive": bool(getattr(extractor, "extractive", False)),
            # the precision it decoded in (a model's slotwise.json "cpu_dtype" on the CPU)
            "dtype": str(getattr(extractor, "torch_dtype", "")).removeprefix("torch."),
            "engine_decoder": run.engine_decoder,  # which AR an AR run is (the pages name it)
        },
    )
    lease_seconds = settings.EXTRACTION_LEASE_SECONDS
    batch_size = int(run.decode_settings.get("batch_size") or settings.EXTRACTION_BATCH_SIZE)
    stack = run.decode_settings.get("stack")
    attributes: dict[int, list] = {}

    def specs(schema_id: int) -> list:
        if schema_id not in attributes:
            sizes = sizes_of(run.decode_settings, schema_id)
            attributes[schema_id] = decoding.attribute_specs(schema_id, sizes)
        return attributes[schema_id]

    budget = BatchBudget(extractor, specs, run.engine_decoder, stack)
    while True:
        if time.monotonic() >= until:
            return False
        held: list[int] = []
        try:
            if not _one_batch(run, extractor, owner, batch_size, lease_seconds, stack, budget, held):
                return True
        except DATABASE_ERRORS as exc:
            recover_from_database_loss(run_id, owner, held, exc)


def set_phase(run_id: int, phase: str) -> None:
    """Say on the run what this worker does with it now (the run pages show it in words)."""
    Run.objects.filter(pk=run_id).exclude(phase=phase).update(phase=phase, phase_since=timezone.now())


def run_stopped(run_id: int, every: float = CANCEL_CHECK_SECONDS):
    """A should_stop for the engine: True once the run is no longer active (cancelled, failed),
    asking PostgreSQL at most every `every` seconds. A lost connection answers False: the batch goes
    on, and the write after it meets the loss as it would anyway."""
    asked_at = time.monotonic()

    def should_stop() -> bool:
        nonlocal asked_at
        if time.monotonic() - asked_at < every:
            return False
        asked_at = time.monotonic()
        try:
            return not Run.objects.filter(pk=run_id, status__in=Run.ACTIVE_STATUSES).exists()
        except DATABASE_ERRORS:
            return False

    return should_stop


def given_up(item, budget: BatchBudget) -> str:
    """Why a product whose worker kept dying while decoding it (alone: runner/leases.py) is failed."""
    return (
        f"its worker stopped {item.attempts - 1} times while decoding it; gave up. Its prompt takes "
        f"{budget.positions(item)} positions (a worker decodes at most "
        f"{settings.EXTRACTION_MAX_PROMPT_POSITIONS}, EXTRACTION_MAX_PROMPT_POSITIONS); decoding it alone is "
        f"estimated at {budget.batch_bytes([item]) // MB} MB of the worker's "
        f"{settings.EXTRACTION_MEMORY_BUDGET_MB} MB (EXTRACTION_MEMORY_BUDGET_MB): shorten its description"
    )


def _one_batch(run, extractor, owner, batch_size, lease_seconds, stack, budget, held) -> bool:
    """Lease, decode and record one batch (its item ids go into `held` as soon as it is leased);
    False when the run is over."""
    run_id = run.id
    items = lease_batch(run_id, owner, batch_size, lease_seconds, fits=budget.fits)
    if not items:
        waiting = why_nothing_to_lease(run_id)
        if waiting.over:
            return False
        time.sleep(min(waiting.next_expiry_seconds + 0.2, MAX_IDLE_WAIT_SECONDS))
        return True
    held.extend(item.id for item in items)
    log.info(
        "run %s: leased %d products, their decoding estimated at %d MB of %d MB",
        run_id,
        len(items),
        budget.batch_bytes(items) // MB,
        settings.EXTRACTION_MEMORY_BUDGET_MB,
    )
    dying = [item for item in items if item.attempts > settings.EXTRACTION_MAX_ATTEMPTS]
    outcomes = [ItemOutcome(item.id, error=given_up(item, budget)) for item in dying]
    todo = [item for item in items if item not in dying]
    schema_id = items[0].schema_id
    totals = None
    set_phase(run_id, Run.Phase.DECODING)
    if todo:
        try:
            with LeaseHeartbeat([item.id for item in items], owner, lease_seconds):
                decoded, totals = decoding.decode_items(
                    extractor, todo, budget.specs(schema_id), run.engine_decoder, stack, run_stopped(run_id)
                )
        except decoding.Cancelled:
            cancelled = cancel_own_leases(run_id, [item.id for item in items], owner)
            log.info("run %s stopped: gave up a batch mid-decode, %d products cancelled", run_id, cancelled)
            return False
        outcomes += decoded
    set_phase(run_id, Run.Phase.WRITING)
    written = record_results(run_id, owner, outcomes, totals)
    set_phase(run_id, Run.Phase.DECODING)
    if written < len(items):
        log.warning(
            "run %s: %d of %d leases were taken over before recording",
            run_id,
            len(items) - written,
            len(items),
        )
    return True
