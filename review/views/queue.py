"""The review queue page and its htmx partials."""

from urllib.parse import urlencode

from django.db.models import Count, Q
from django.shortcuts import render
from django.views.decorators.http import require_GET

from catalog.models import Attribute, Catalog, Category
from extraction.models import ExtractedValue, Run
from review import shortcuts
from review.filters import SORTS, USEFUL, FilterError, QueueFilter, page_size, partner_of, runs_with_values
from review.models import APPROVED, BulkAction, ValueReview
from review.paging import CursorError, page_of
from review.rows import make_row
from review.useful_order import useful_page
from review.views.common import reviewers_only, settings_of
from slotwise.error_pages import bad_request

RUN_CHOICES = 50


def _attribute_names(run: Run | None) -> list[str]:
    """The attribute filter's choices: a run's are its schema versions' attributes (a few rows, not
    a DISTINCT over the run's values); without a run, every attribute that has values."""
    if run is not None:
        names = Attribute.objects.filter(schema__runs=run).values_list("name", flat=True)
    else:
        names = ExtractedValue.objects.values_list("attribute__name", flat=True)
    return sorted(set(names.distinct()))


def _counts(queue_filter: QueueFilter) -> dict:
    """The page's total, the bulk buttons' and the export's counts in one pass over the filter's values."""
    return queue_filter.values().aggregate(
        total=Count("pk"),
        bulk_accept_count=Count("pk", filter=ValueReview.bulk_changeable(BulkAction.Action.ACCEPT)),
        bulk_reject_count=Count("pk", filter=ValueReview.bulk_changeable(BulkAction.Action.REJECT)),
        approved_count=Count("pk", filter=Q(review__status__in=APPROVED)),  # as exports.approved
    )


def _choices(queue_filter: QueueFilter, run: Run | None) -> dict:
    return {
        "runs": runs_with_values()[:RUN_CHOICES],
        "catalogs": Catalog.objects.all(),
        "categories": Category.objects.all(),
        "attributes": _attribute_names(run),
        "statuses": ValueReview.Status.choices,
        "sorts": SORTS.items(),
    }


def queue_context(request, queue_filter: QueueFilter) -> dict:
    """Raises CursorError for a page cursor that does not fit the filter's order."""
    queue_filter = queue_filter.with_default_run()
    run = queue_filter.run_with_partner()
    partner = partner_of(run) if run else None
    counts = _counts(queue_filter)
    total = counts.pop("total")
    cursors = {"after": request.GET.get("after", ""), "before": request.GET.get("before", "")}
    if queue_filter.sort == USEFUL:
        page = useful_page(queue_filter, partner, page_size(), **cursors)
    else:
        page = page_of(
            queue_filter.ordered_values(partner=partner),
            queue_filter.ordering(partner is not None),
            page_size(),
            total=total,
            **cursors,
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
        **counts,
        **_choices(queue_filter, run),
    }


@require_GET
@reviewers_only
def queue(request):
    try:
        context = queue_context(request, QueueFilter.from_params(request.GET))
    except (FilterError, CursorError) as exc:
        return bad_request(request, f"Cannot filter the queue: {exc}")
    user_settings = settings_of(request.user)
    context["keys"] = shortcuts.effective(user_settings.shortcuts)
    if request.htmx and request.htmx.target == "queue-body":
        return render(request, "review/_queue_body.html", context)
    context["shortcuts"] = shortcuts.listing(user_settings.shortcuts)
    return render(request, "review/queue.html", context)
