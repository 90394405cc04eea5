"""Run screens: list, start, the live run page (htmx progress), cancel. Thin: work is in services."""

from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.roles import ADMIN, REVIEWER, role_required
from extraction import comparison, sizes
from extraction.forms import RunForm
from extraction.models import ExtractedValue, Run, WorkItem
from extraction.progress import progress
from extraction.services import AlreadyStarted, RunRefused, do_cancel_run, do_start_run, selected_products

RESULTS_PER_PAGE = 50
# A second "Start run" of the same selection, decoder and model by the same user within this long,
# while the first is still active, is a double submit: it opens the first run instead.
START_ONCE_WITHIN = timedelta(seconds=60)
RUNS_PER_PAGE = 30


@require_GET
@role_required(ADMIN, REVIEWER)
def runs(request):
    page = Paginator(Run.objects.select_related("catalog", "category", "created_by"), RUNS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    rows = [(run, progress(run)) for run in page]
    return render(request, "extraction/runs.html", {"page": page, "rows": rows})


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def start(request):
    form = RunForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            started = do_start_run(form.run_request(), user=request.user, once_within=START_ONCE_WITHIN)
        except RunRefused as exc:
            form.add_error(None, str(exc))
        except AlreadyStarted as exc:
            seconds = max(1, round((timezone.now() - exc.runs[0].created_at).total_seconds()))
            messages.info(
                request,
                f"You started this run {seconds} s ago (the form was sent twice?): no second run was "
                "started. This is the run.",
            )
            return redirect("extraction:detail", run_id=exc.runs[0].id)
        else:
            messages.success(request, started_message(started))
            return redirect("extraction:detail", run_id=started[0].id)
    context = {"form": form, "once_within": int(START_ONCE_WITHIN.total_seconds())}
    return render(request, "extraction/start.html", context, status=400 if form.errors else 200)


def started_message(started: list[Run]) -> str:
    total = started[0].total
    products = f"{total} product{'s' if total != 1 else ''}"
    if len(started) == 1:
        return f"Queued {products}."
    return (
        f"Queued {products} in two linked runs, HPD and AR: with one worker free, AR starts when HPD "
        "finishes (two free workers run them side by side); this page compares them as they finish."
    )


@require_GET
@role_required(ADMIN)
def selection_count(request):
    """htmx: how many products the form's current selection would queue."""
    form = RunForm(request.GET)
    form.is_valid()  # the count only needs the selection fields that validated
    data = form.cleaned_data
    count = selected_products(data.get("catalog"), data.get("category"), data.get("search") or "").count()
    return HttpResponse(f"{count} product{'s' if count != 1 else ''} selected")


def _results(run: Run, status: str, page_number):
    items = WorkItem.objects.filter(run=run).select_related("product").order_by("id")
    if status in WorkItem.Status.values:
        items = items.filter(status=status)
    page = Paginator(items, RESULTS_PER_PAGE).get_page(page_number)
    values = defaultdict(list)
    for value in (
        ExtractedValue.objects.filter(run=run, product__in=[item.product_id for item in page])
        .select_related("attribute")
        .order_by("attribute__position")
    ):
        values[value.product_id].append(value)
    return page, [(item, values[item.product_id]) for item in page]


def _run_context(request, run: Run) -> dict:
    status = request.GET.get("status", "")
    page, results = _results(run, status, request.GET.get("page"))
    context = {
        "run": run,
        "progress": progress(run),
        "results_page": page,
        "results": results,
        "status_filter": status,
        "status_choices": WorkItem.Status.choices,
        "max_load_failures": settings.EXTRACTION_MAX_LOAD_FAILURES,
        "too_small": sizes.too_small(run),
    }
    linked = run.linked_run
    if linked is not None:
        hpd, ar = (run, linked) if run.decoder == Run.Decoder.HPD else (linked, run)
        context["compare"] = {
            "hpd": hpd,
            "ar": ar,
            "linked_active": linked.is_active,  # the comparison grows until the other run ends too
            "agreement": comparison.agreement_by_attribute(hpd, ar),
            "disagreements": Paginator(comparison.disagreements(hpd, ar), RESULTS_PER_PAGE).get_page(
                request.GET.get("dpage")
            ),
        }
    return context


@require_GET
@role_required(ADMIN, REVIEWER)
def detail(request, run_id: int):
    run = get_object_or_404(
        Run.objects.select_related("catalog", "category", "created_by", "linked_run", "model_version")
        .defer("model_version__archive")  # a stored version's bytes stay in PostgreSQL
        .prefetch_related(Prefetch("schema_versions")),
        pk=run_id,
    )
    context = _run_context(request, run)
    # The page reloads these two parts by themselves: results on a filter change and when the run ends,
    # the summary (model, totals, HPD/AR comparison) when the run ends.
    partials = {"run-results": "extraction/_results.html", "run-summary": "extraction/_summary.html"}
    if request.htmx and request.htmx.target in partials:
        return render(request, partials[request.htmx.target], context)
    return render(request, "extraction/detail.html", context)


@require_GET
@role_required(ADMIN, REVIEWER)
def progress_partial(request, run_id: int):
    """Polled by the run page. A GET changes nothing: a run whose wake-up messages were lost is woken
    by beat's reaper (wake_waiting_runs), not by whoever happens to watch it."""
    run = get_object_or_404(Run, pk=run_id)
    context = {
        "run": run,
        "progress": progress(run),
        "max_load_failures": settings.EXTRACTION_MAX_LOAD_FAILURES,
    }
    response = render(request, "extraction/_progress.html", context)
    if not run.is_active:
        response["HX-Trigger"] = "run-finished"
    return response


@require_POST
@role_required(ADMIN)
def cancel(request, run_id: int):
    run = get_object_or_404(Run, pk=run_id)
    if run.is_active:
        do_cancel_run(run.id)
        messages.info(request, f"{run} cancelled: queued products will not be decoded.")
    else:
        messages.error(
            request,
            f"{run} is {run.get_status_display().lower()}; only a queued or running run can be cancelled.",
        )
    return redirect("extraction:detail", run_id=run.id)
