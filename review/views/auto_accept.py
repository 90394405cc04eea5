"""Auto-accept at a chosen precision: the admin names a precision, the page proposes the
confidence threshold that reaches it (review/precision.py), and accepting runs as a bulk accept
of the filter's pending values with confidence at least that threshold."""

from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from accounts.roles import ADMIN, role_required
from extraction.models import Run
from review import bulk, precision
from review.filters import FilterError, QueueFilter
from review.models import BulkAction
from review.views.common import bad_request
from review.views.jobs import launch_bulk

DEFAULT_TARGET = "98"


def parse_target(raw: str) -> float:
    """A precision typed as a percentage ("98", "98%", "99.5"), as a fraction."""
    text = (raw or "").strip().rstrip("%").strip()
    try:
        percent = float(text)
    except ValueError:
        raise ValueError(f"target precision: {raw!r} is not a number; type a percentage such as 98") from None
    if not 0 < percent <= 100:  # refuses nan too
        raise ValueError(f"target precision: {raw} is outside 0 to 100 percent")
    return percent / 100


def pending_at_least(queue_filter: QueueFilter, threshold: float) -> QueueFilter:
    """What auto-accept accepts: the filter's pending values with confidence >= threshold."""
    return queue_filter.but(status="pending", min_confidence=threshold)


@require_GET
@role_required(ADMIN)
def auto_accept(request):
    try:
        queue_filter = QueueFilter.from_params(request.GET).with_default_run()
    except FilterError as exc:
        return bad_request(f"Cannot auto-accept: {exc}")
    target_text = request.GET.get("target", DEFAULT_TARGET)
    context = {"filter": queue_filter, "params": queue_filter.as_params(), "target_text": target_text}
    try:
        target = parse_target(target_text)
    except ValueError as exc:
        return render(request, "review/auto_accept.html", {**context, "error": str(exc)}, status=400)
    run = Run.objects.filter(pk=queue_filter.run).first() if queue_filter.run else None
    context.update(target=target, target_pct=precision.percent(target), run=run)
    if run is not None:
        found = precision.estimate(run, target)
        context["estimate"] = found
        if found.proposal is not None:
            accepting = pending_at_least(queue_filter, found.proposal.threshold)
            context.update(
                accept_params=accepting.as_params(),
                accept_count=bulk.candidates(accepting, BulkAction.Action.ACCEPT).count(),
            )
    return render(request, "review/auto_accept.html", context)


@require_POST
@role_required(ADMIN)
def start_auto_accept(request):
    """Accept the filter's pending values with confidence >= the posted threshold, in bulk."""
    try:
        queue_filter = QueueFilter.from_params(request.POST)
    except FilterError as exc:
        return bad_request(f"Cannot auto-accept: {exc}")
    if queue_filter.min_confidence is None:
        return bad_request("min_confidence: auto-accept needs the threshold the page proposed")
    back_to = queue_filter.but(status="", min_confidence=None).as_params()
    return launch_bulk(
        request,
        pending_at_least(queue_filter, queue_filter.min_confidence),
        BulkAction.Action.ACCEPT,
        back_to,
    )
