"""Auto-accept at a chosen precision, per attribute: a person names a precision, the page offers
for each attribute of the run the confidence threshold whose precision, estimated on this catalog's
blind labels, reaches it with the interval's lower end, or the threshold pooled over the attributes
with too few labels of their own (review/precision.py); accepting runs as a
bulk accept of that attribute's pending values with confidence at least that threshold. The
threshold is computed again on the server when the accept is posted: nothing the form carries can
lower it. Values cut by the token budget are never accepted in bulk (review/bulk.py).
Reviewers see the page read-only (the thresholds, and how many more blind-labelled products each
attribute needs); accepting values nobody looked at stays the catalog admin's call."""

from urllib.parse import urlencode

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.roles import ADMIN, REVIEWER, has_role, role_required
from extraction.models import Run
from review import bulk, precision
from review.filters import FilterError, QueueFilter
from review.models import BulkAction
from review.views.jobs import launch_bulk
from slotwise.error_pages import bad_request
from slotwise.params import ParameterError, parse_number

DEFAULT_TARGET = "98"


def parse_target(raw: str) -> float:
    """A precision typed as a percentage ("98", "98%", "99.5"), as a fraction."""
    text = (raw or "").strip().rstrip("%").strip()
    try:
        percent = parse_number(text, "target precision")
    except ParameterError:
        raise ValueError(f"target precision: {raw!r} is not a number; type a percentage such as 98") from None
    if not 0 < percent <= 100:
        raise ValueError(f"target precision: {raw} is outside 0 to 100 percent")
    return percent / 100


def pending_at_least(queue_filter: QueueFilter, threshold: float) -> QueueFilter:
    """What auto-accept accepts: the filter's pending values with confidence >= threshold."""
    return queue_filter.but(status="pending", min_confidence=threshold)


def blind_url(run: Run) -> str:
    """The blind labelling page over the run's catalog (and category)."""
    params = {"catalog": run.catalog_id}
    if run.category_id:
        params["category"] = run.category_id
    return (
        f"{reverse('review:blind_label')}?{urlencode(params)}"
        if run.catalog_id
        else reverse("review:blind_start")
    )


@require_GET
@role_required(ADMIN, REVIEWER)
def auto_accept(request):
    try:
        queue_filter = QueueFilter.from_params(request.GET).with_default_run()
    except FilterError as exc:
        return bad_request(request, f"Cannot auto-accept: {exc}")
    target_text = request.GET.get("target", DEFAULT_TARGET)
    context = {
        "filter": queue_filter,
        "params": queue_filter.as_params(),
        "target_text": target_text,
        # the accept buttons only for a role the accept itself lets in
        "can_accept": has_role(request.user, *start_auto_accept.allowed_roles),
    }
    try:
        target = parse_target(target_text)
    except ValueError as exc:
        return render(request, "review/auto_accept.html", {**context, "error": str(exc)}, status=400)
    run = Run.objects.filter(pk=queue_filter.run).first() if queue_filter.run else None
    context.update(
        target=target,
        target_pct=precision.percent(target),
        run=run,
        min_products=precision.MIN_PRODUCTS,
    )
    if run is not None:
        found = precision.estimate(run, target)
        if queue_filter.attribute:
            found.attributes = [a for a in found.attributes if a.attribute == queue_filter.attribute]
        for attribute in found.offered:
            accepting = pending_at_least(
                queue_filter.but(attribute=attribute.attribute), attribute.proposal.threshold
            )
            attribute.pending = bulk.candidates(accepting, BulkAction.Action.ACCEPT).count()
        context.update(estimate=found, blind_url=blind_url(run))
    return render(request, "review/auto_accept.html", context)


@require_POST
@role_required(ADMIN)
def start_auto_accept(request):
    """Accept one attribute's pending values with confidence >= the threshold offered for it at the
    posted target, in bulk; refused when no threshold is offered (too little blind evidence)."""
    try:
        queue_filter = QueueFilter.from_params(request.POST)
        target = parse_target(request.POST.get("target", ""))
    except (FilterError, ValueError) as exc:
        return bad_request(request, f"Cannot auto-accept: {exc}")
    run = Run.objects.filter(pk=queue_filter.run).first() if queue_filter.run else None
    if run is None or not queue_filter.attribute:
        return bad_request(request, "Cannot auto-accept: the form must name the run and the attribute")
    found = precision.estimate(run, target).of(queue_filter.attribute)
    if found is None or found.proposal is None:
        return bad_request(
            request,
            f"Cannot auto-accept {queue_filter.attribute}: no threshold reaches {precision.percent(target)} "
            "on this catalog's blind labels; label more products blind",
        )
    back_to = queue_filter.but(status="", min_confidence=None).as_params()
    return launch_bulk(
        request,
        pending_at_least(queue_filter, found.proposal.threshold),
        BulkAction.Action.ACCEPT,
        back_to,
    )
