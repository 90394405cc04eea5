"""How far a run has got: counts, speed, the time left and what it is doing now, as the run pages
show them (read only).

A batch is decoded as one piece (HPD stacks its products into shared prompts), so nothing is "done"
inside it until it is written; what a person can watch meanwhile is which batch it is, how many
products it holds and how long it has been decoding (Batch). The time left comes from the products
written so far; while a batch runs much longer than that rate says it should (AR on long titles, a
slow machine), that number would sit still and mislead, so the pages say the time left is being
re-estimated instead.
"""

import math
from dataclasses import dataclass, replace

from django.db.models import Count, Q
from django.utils import timezone

from extraction.models import Run, WorkItem

# A batch "runs long" once it has decoded this many times as long as the run's rate says its products
# should take, and at least LONG_BATCH_GRACE_SECONDS more (short batches jitter by seconds).
LONG_BATCH_FACTOR = 1.5
LONG_BATCH_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class Batch:
    """The batch a worker is decoding now (with several workers: the run's products in flight)."""

    number: int  # 1-based, counted in the run's batch size
    batches: int
    products: int
    seconds: float  # since the worker began it
    expected_seconds: float | None  # what the run's rate so far says it should take

    @property
    def runs_long(self) -> bool:
        if self.expected_seconds is None:
            return False
        limit = max(
            LONG_BATCH_FACTOR * self.expected_seconds, self.expected_seconds + LONG_BATCH_GRACE_SECONDS
        )
        return self.seconds > limit

    @property
    def words(self) -> str:
        line = (
            f"Batch {self.number} of {self.batches}: {self.products} product{'s' if self.products != 1 else ''}, "
            f"decoding for {_elapsed(self.seconds)}"
        )
        if self.expected_seconds is None:
            return line + " (the first batch: its products show when all of it is written)"
        if self.runs_long:
            return line + (
                f", longer than the about {_duration(self.expected_seconds)} the earlier batches took; "
                "its products show when all of it is written"
            )
        return line + f" (earlier batches took about {_duration(self.expected_seconds)})"


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    failed: int
    cancelled: int
    seconds: float
    products_per_second: float
    eta_seconds: float | None
    phase: str = ""  # what the run is doing now, in words (phase_words)
    batch: Batch | None = None  # the batch being decoded now, when a worker decodes one

    @property
    def eta_words(self) -> str:
        """The time left for the ETA box: a duration, or why there is none yet."""
        if self.batch is not None and self.batch.runs_long:
            return "estimating: this batch runs long"
        if self.eta_seconds is not None:
            return f"about {_duration(self.eta_seconds)}"
        return ""

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.cancelled

    @property
    def percent(self) -> float:
        """The bar: products done (failed and cancelled ones are not progress), so a bar always
        matches the "done / total" beside it."""
        return 100.0 * self.done / self.total if self.total else 100.0


def progress(run: Run, now=None) -> Progress:
    now = now or timezone.now()
    cancelled = (
        WorkItem.objects.filter(run=run, status=WorkItem.Status.CANCELLED).count()
        if run.status == Run.Status.CANCELLED or run.status == Run.Status.FAILED
        else 0
    )
    seconds = ((run.finished_at or now) - run.started_at).total_seconds() if run.started_at else 0.0
    rate = (run.done + run.failed) / seconds if seconds > 0 else 0.0
    remaining = run.total - run.done - run.failed - cancelled
    eta = remaining / rate if rate > 0 and run.is_active else None
    counts = Progress(run.total, run.done, run.failed, cancelled, seconds, rate, eta)
    counts = replace(counts, batch=current_batch(run, counts, now))
    if counts.batch is not None and counts.batch.runs_long:
        counts = replace(counts, eta_seconds=None)
    return replace(counts, phase=phase_words(run, counts))


def current_batch(run: Run, p: Progress, now) -> Batch | None:
    """The batch being decoded: its products are the run's leased ones, its start the moment the
    worker last began decoding (Run.phase_since, set by runner.loop.set_phase)."""
    if run.status != Run.Status.RUNNING or run.phase != Run.Phase.DECODING or run.phase_since is None:
        return None
    per_schema = (
        WorkItem.objects.filter(run=run)
        .values("schema_id")
        .annotate(
            items=Count("id"),
            queued=Count("id", filter=Q(status=WorkItem.Status.QUEUED)),
            leased=Count("id", filter=Q(status=WorkItem.Status.LEASED)),
        )
    )
    in_flight = sum(row["leased"] for row in per_schema)
    if not in_flight:
        return None
    # a batch holds products of one schema version (runner.leases), so each schema's products
    # make their own batches; this one is the last begun, counted from the batches still queued
    size = max(1, int(run.decode_settings.get("batch_size") or in_flight))
    batches = sum(math.ceil(row["items"] / size) for row in per_schema)
    number = max(1, batches - sum(math.ceil(row["queued"] / size) for row in per_schema))
    # what the batches written before this one took per product: the run's rate without the time
    # this batch has been running (which would stretch the expectation along with the batch)
    before = (run.phase_since - run.started_at).total_seconds() if run.started_at else 0.0
    expected = in_flight * before / p.finished if p.finished and before > 0 else None
    return Batch(number, batches, in_flight, max(0.0, (now - run.phase_since).total_seconds()), expected)


def queued_ahead(run: Run) -> int:
    """Active runs queued before `run`: workers take runs in the order they were queued."""
    return (
        Run.objects.filter(status__in=Run.ACTIVE_STATUSES, created_at__lt=run.created_at)
        .exclude(pk=run.pk)
        .count()
    )


def phase_words(run: Run, p: Progress) -> str:
    """What the run is doing now, in words: queued behind N runs, loading the model, decoding with a
    rate and the time left (once a batch gave a rate), writing; or how it ended."""
    if run.status == Run.Status.DONE:
        return f"Done: {p.done} products in {p.seconds:.0f} s" + (f", {p.failed} failed" if p.failed else "")
    if run.status == Run.Status.CANCELLED:
        return f"Cancelled after {p.done} of {p.total} products"
    if run.status == Run.Status.FAILED:
        return f"Failed after {p.done} of {p.total} products"
    if run.phase == Run.Phase.LOADING and not p.done:
        return f"Loading the model {run.model_name or run.model_dir or '(bundled)'}"
    if run.status == Run.Status.QUEUED:
        ahead = queued_ahead(run)
        if ahead:
            return f"Queued behind {ahead} run{'s' if ahead != 1 else ''}: workers take runs in the order they were queued"
        return "Queued: waiting for a free worker"
    if run.phase == Run.Phase.WRITING:
        return f"Writing a batch's values ({p.done} of {p.total} done)"
    if not p.done:
        return "Decoding the first batch: the rate and the time left show once it is written"
    if p.batch is not None and p.batch.runs_long:
        return (
            f"Decoding: {p.products_per_second:.2f} products/s so far; this batch runs longer than the "
            "earlier ones, so the time left is re-estimated once it is written"
        )
    left = f", about {_duration(p.eta_seconds)} left" if p.eta_seconds is not None else ""
    return f"Decoding: {p.products_per_second:.2f} products/s{left}"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _elapsed(seconds: float) -> str:
    """A running time that visibly moves with each one-second poll: seconds, with minutes past 60."""
    seconds = int(seconds)
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"
