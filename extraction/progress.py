"""How far a run has got: counts, speed, the time left and what it is doing now, as the run pages
show them (read only)."""

from dataclasses import dataclass, replace

from django.utils import timezone

from extraction.models import Run, WorkItem


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
    return replace(counts, phase=phase_words(run, counts))


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
    left = f", about {_duration(p.eta_seconds)} left" if p.eta_seconds is not None else ""
    return f"Decoding: {p.products_per_second:.2f} products/s{left}"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
