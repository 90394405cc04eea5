"""The review queue page and its htmx partials."""

from urllib.parse import urlencode

from django.shortcuts import render
from django.views.decorators.http import require_GET

from catalog.models import Catalog, Category
from extraction.models import ExtractedValue, Run
from review import bulk, exports, shortcuts
from review.filters import SORTS, FilterError, QueueFilter, page_size, partner_of
from review.paging import CursorError, page_of
from review.rows import make_row
from review.views.common import bad_request, reviewers_only, settings_of

RUN_CHOICES = 50


def _choices(queue_filter: QueueFilter) -> dict:
    attributes = ExtractedValue.objects.all()
    if queue_filter.run is not None:
        attributes = attributes.filter(run_id=queue_filter.run)
    return {
        "runs": Run.objects.filter(values__isnull=False)
        .distinct()
        .order_by("-created_at", "-id")[:RUN_CHOICES],
        "catalogs": Catalog.objects.all(),
        "categories": Category.objects.all(),
        "attributes": sorted(set(attributes.values_list("attribute__name", flat=True).distinct())),
        "statuses": ExtractedValue.ReviewStatus.choices,
        "sorts": SORTS.items(),
    }


def queue_context(request, queue_filter: QueueFilter) -> dict:
    """Raises CursorError for a page cursor that does not fit the filter's order."""
    queue_filter = queue_filter.with_default_run()
    run = Run.objects.filter(pk=queue_filter.run).first() if queue_filter.run else None
    partner = partner_of(run) if run else None
    page = page_of(
        queue_filter.ordered_values(),
        queue_filter.ordering(partner is not None),
        page_size(),
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
    )
    params = queue_filter.as_params()
    return {
        "filter": queue_filter,
        "params": params,
        "query": urlencode(params),
        "page": page,
        "rows": [make_row(v) for v in page.rows],
        "run": run,
        "partner": partner,
        "bulk_accept_count": bulk.candidates(queue_filter, bulk.BulkAction.Action.ACCEPT).count(),
        "bulk_reject_count": bulk.candidates(queue_filter, bulk.BulkAction.Action.REJECT).count(),
        "approved_count": exports.approved(queue_filter).count(),
        **_choices(queue_filter),
    }


@require_GET
@reviewers_only
def queue(request):
    try:
        context = queue_context(request, QueueFilter.from_params(request.GET))
    except (FilterError, CursorError) as exc:
        return bad_request(f"Cannot filter the queue: {exc}")
    user_settings = settings_of(request.user)
    context["keys"] = shortcuts.effective(user_settings.shortcuts)
    if request.htmx and request.htmx.target == "queue-body":
        return render(request, "review/_queue_body.html", context)
    context["shortcuts"] = shortcuts.listing(user_settings.shortcuts)
    return render(request, "review/queue.html", context)
