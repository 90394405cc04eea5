"""Actions on one value (accept, correct, reject, n/a, undo) and its history."""

import json
from dataclasses import dataclass

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from extraction.models import ExtractedValue
from review.actions import NothingToUndo, ReviewError, do_review, do_undo
from review.models import ValueEvent
from review.rows import fresh_row, make_row
from review.transition import ReviewConflict
from review.views.common import redirect_back, reviewers_only, shortcut_keys
from slotwise.error_pages import bad_request
from slotwise.params import ParameterError, optional_ids, whole_number

ROW_ACTIONS = {
    ValueEvent.Action.ACCEPT,
    ValueEvent.Action.CORRECT,
    ValueEvent.Action.REJECT,
    ValueEvent.Action.SET_NA,
}
CONFLICT = 409


def _row_response(request, row, status=200):
    return render(
        request, "review/_row.html", {"row": row, "keys": shortcut_keys(request.user)}, status=status
    )


@dataclass
class Acted:
    """How a posted single action went: "ok", or "conflict" / "error" with the message for the
    reviewer and the input to give back (`attempted`), under the HTTP status to answer with."""

    outcome: str = "ok"
    message: str = ""
    attempted: str = ""
    status: int = 200


def act_on(request, value_id: int) -> Acted | HttpResponse:
    """Make the posted action (accept, correct, reject, n/a) on one value, at the version the form
    saw: the queue's rows and the product page post here alike. An HttpResponse for a form that
    cannot be read (nothing changed); Http404 when there is no such value."""
    action = request.POST.get("action", "")
    # The edit box travels with every action; only a correction means what is typed in it.
    text = request.POST.get("value") if action == ValueEvent.Action.CORRECT else None
    if action not in ROW_ACTIONS:
        return bad_request(request, f"action: {action!r} is not one of {', '.join(sorted(ROW_ACTIONS))}")
    try:
        version = whole_number(request.POST, "version")
    except ParameterError as exc:
        return bad_request(request, f"{exc}: the form must send the version of the value it shows")
    try:
        do_review(value_id, version, action, request.user, text=text)
    except ExtractedValue.DoesNotExist:
        raise Http404(f"there is no value {value_id}") from None
    except ReviewConflict as exc:
        return Acted("conflict", str(exc), text or "", CONFLICT)
    except ReviewError as exc:
        return Acted("error", str(exc), text or "", 400)
    return Acted()


@require_POST
@reviewers_only
def review_value(request, value_id: int):
    acted = act_on(request, value_id)
    if isinstance(acted, HttpResponse):
        return acted
    if not request.htmx:
        if acted.message:
            messages.error(request, acted.message)
        return redirect_back(request)
    row = fresh_row(value_id, outcome=acted.outcome, message=acted.message, attempted=acted.attempted)
    return _row_response(request, row, acted.status)


def _trigger(response, text: str, focus: int | None = None):
    response["HX-Trigger"] = json.dumps({"review-message": {"text": text}})
    if focus is not None:
        # After settling, so the row it names is the one just swapped in.
        response["HX-Trigger-After-Settle"] = json.dumps({"review-focus": {"id": focus}})
    return response


@require_POST
@reviewers_only
def undo(request):
    try:
        # The value ids the queue page shows (its undo sends them), so an undo that reaches a value
        # elsewhere says so instead of changing it out of sight. Read before the undo is made: a
        # bad list is refused with nothing undone.
        on_page = optional_ids(request.POST, "on_page")
    except ParameterError as exc:
        return bad_request(request, f"Cannot undo: {exc}; nothing was undone")
    try:
        undone = do_undo(request.user)
    except NothingToUndo as exc:
        text, status = str(exc), 200
    except ReviewConflict as exc:
        text, status = f"Cannot undo: {exc}", CONFLICT
    else:
        value = undone.value
        if not request.htmx:
            messages.success(request, undone.text)
            return redirect_back(request)
        if value is None:  # a bulk action: many rows may have changed, the page is drawn again
            messages.success(request, undone.text)
            response = render(request, "review/_empty.html")
            response["HX-Refresh"] = "true"
            return response
        if value.pk not in on_page:
            response = render(request, "review/_empty.html")
            response["HX-Reswap"] = "none"
            return _trigger(response, f"{undone.text} It is not on this page.")
        response = _row_response(request, fresh_row(value.pk))
        response["HX-Retarget"] = f"#value-{value.pk}"
        response["HX-Reswap"] = "outerHTML"
        return _trigger(response, undone.text, focus=value.pk)
    if not request.htmx:
        messages.error(request, text)
        return redirect_back(request)
    response = render(request, "review/_empty.html", status=200 if status == 200 else CONFLICT)
    response["HX-Reswap"] = "none"
    return _trigger(response, text)


@require_GET
@reviewers_only
def row(request, value_id: int):
    get_object_or_404(ExtractedValue, pk=value_id)
    return _row_response(request, fresh_row(value_id))


@require_GET
@reviewers_only
def history(request, value_id: int):
    value = get_object_or_404(
        ExtractedValue.objects.select_related("product", "attribute", "run", "review__reviewed_by"),
        pk=value_id,
    )
    events = value.events.select_related("actor", "run")
    return render(
        request,
        "review/history.html",
        {"value": value, "row": make_row(value), "shown": value.review.shown(value.value), "events": events},
    )
