"""Bulk actions and exports: small ones within the request, large ones as background jobs."""

import io
from urllib.parse import urlencode

from django.contrib import messages
from django.db import transaction
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from review import bulk, exports, tasks
from review.filters import FilterError, QueueFilter
from review.models import BulkAction, ExportJob
from review.views.common import reviewers_only
from slotwise.error_pages import bad_request

CONTENT_TYPES = {ExportJob.Format.CSV: "text/csv; charset=utf-8", ExportJob.Format.JSON: "application/json"}


PAST = {BulkAction.Action.ACCEPT: "Accepted", BulkAction.Action.REJECT: "Rejected"}
# Marks the message of a finished bulk action: base.html gives it an Undo button (the "u" key's undo).
UNDOABLE_BULK = "undoable-bulk"


def _queue_url(params: dict) -> str:
    try:
        queue_filter = QueueFilter.from_params(params)
    except FilterError:  # the run went away since: the queue's own default is the best place
        return reverse("review:queue")
    return f"{reverse('review:queue')}?{urlencode(queue_filter.as_params())}"


@require_POST
@reviewers_only
def start_bulk(request):
    try:
        queue_filter = QueueFilter.from_params(request.POST)
    except FilterError as exc:
        return bad_request(request, f"Cannot run the bulk action: {exc}")
    action = request.POST.get("action", "")
    if action not in BulkAction.Action.values:
        return bad_request(request, f"action: {action!r} is not one of {', '.join(BulkAction.Action.values)}")
    return launch_bulk(request, queue_filter, action)


def launch_bulk(request, queue_filter: QueueFilter, action: str, back_to: dict | None = None):
    """Run a bulk action within the request when it is small, else as a background job; the
    auto-accept page starts its accept through here too. `back_to`: the queue filter to return to."""
    job = bulk.do_create_bulk_action(queue_filter, action, request.user)
    if job.total <= bulk.inline_limit():
        job = bulk.run_or_mark_failed(job.pk)
        if job.status == BulkAction.Status.FAILED:
            messages.error(
                request,
                f"Bulk {job.get_action_display().lower()} #{job.pk} failed: {job.error}. "
                f"The {job.changed} values it changed before stay changed.",
            )
        else:
            skipped = f", {job.skipped_note}." if job.skipped else "."
            messages.success(
                request, f"{PAST[job.action]} {job.changed} values{skipped}", extra_tags=UNDOABLE_BULK
            )
        return redirect(_queue_url(back_to or queue_filter.as_params()))
    transaction.on_commit(lambda: tasks.run_bulk_action.delay(job.pk))
    return redirect("review:bulk_status", job_id=job.pk)


@require_GET
@reviewers_only
def bulk_status(request, job_id: int):
    job = get_object_or_404(BulkAction, pk=job_id)
    template = "review/_bulk_progress.html" if request.htmx else "review/bulk_status.html"
    queue_url = _queue_url(job.filters)
    return render(request, template, {"job": job, "queue_url": queue_url})


@require_POST
@reviewers_only
def start_export(request):
    try:
        queue_filter = QueueFilter.from_params(request.POST)
    except FilterError as exc:
        return bad_request(request, f"Cannot export: {exc}")
    fmt, shape = request.POST.get("format", ""), request.POST.get("shape", "")
    # approved values (the default), or every value as it stands with its state
    values = request.POST.get("values", "") or ExportJob.Values.APPROVED
    try:
        exports.check_choice(fmt, shape, values)
    except ValueError as exc:
        return bad_request(request, str(exc))
    if exports.selected(queue_filter, values).count() <= exports.inline_limit():
        out = io.StringIO()
        exports.write_export(out, queue_filter, fmt, shape, values=values)
        response = HttpResponse(out.getvalue(), content_type=CONTENT_TYPES[fmt])
        filename = f"{ExportJob.file_stem(values)}-{shape}.{fmt}"
        response["Content-Disposition"] = content_disposition_header(True, filename)
        return response
    job = exports.do_create_export(queue_filter, fmt, shape, request.user, values)
    transaction.on_commit(lambda: tasks.run_export.delay(job.pk))
    return redirect("review:export_status", job_id=job.pk)


@require_GET
@reviewers_only
def export_status(request, job_id: int):
    job = get_object_or_404(ExportJob, pk=job_id)
    template = "review/_export_progress.html" if request.htmx else "review/export_status.html"
    return render(request, template, {"job": job})


@require_GET
@reviewers_only
def export_download(request, job_id: int):
    job = get_object_or_404(ExportJob, pk=job_id)
    if job.status != ExportJob.Status.DONE or not job.file:
        raise Http404("this export has no file yet")
    return FileResponse(
        job.file.open("rb"), as_attachment=True, filename=job.filename, content_type=CONTENT_TYPES[job.format]
    )
