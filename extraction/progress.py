"""How far a run has got: counts, speed and the time left, as the run pages show them (read only)."""

from dataclasses import dataclass

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

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.cancelled

    @property
    def percent(self) -> float:
        return 100.0 * self.finished / self.total if self.total else 100.0


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
    return Progress(run.total, run.done, run.failed, cancelled, seconds, rate, eta)
