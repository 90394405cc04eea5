"""Accept, correct or set n/a one value in place on its product's page (catalog/views/products.py).

The action goes through the queue's own path (values.act_on: the one transition, its version check,
its history and gold); only the answer differs: the value's cell of the product page, with its new
state, instead of a queue row."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from extraction.models import ExtractedValue
from review.models import ValueEvent
from review.views.common import redirect_back, reviewers_only
from review.views.values import Acted, act_on
from slotwise.error_pages import bad_request

# What the product page offers in place (rejecting stays the queue's).
IN_PLACE_ACTIONS = (ValueEvent.Action.ACCEPT, ValueEvent.Action.CORRECT, ValueEvent.Action.SET_NA)


def product_value(value_id: int) -> ExtractedValue:
    """One value as the product page lists it (ExtractedValue.objects.for_product_page)."""
    return ExtractedValue.objects.for_product_page().get(pk=value_id)


def value_cell(request, value: ExtractedValue, acted: Acted) -> HttpResponse:
    """The value's cell after an action, with the action's message where it did not go through."""
    context = {"value": value, "can_review": True, "acted": acted}
    return render(request, "review/_product_value.html", context, status=acted.status)


@require_POST
@reviewers_only
def review_in_place(request, value_id: int):
    action = request.POST.get("action", "")
    if action not in IN_PLACE_ACTIONS:
        return bad_request(request, f"action: {action!r} is not one of {', '.join(IN_PLACE_ACTIONS)}")
    acted = act_on(request, value_id)
    if isinstance(acted, HttpResponse):
        return acted
    value = product_value(value_id)
    if not request.htmx:
        if acted.message:
            messages.error(request, acted.message)
        return redirect_back(request, reverse("catalog:product", args=[value.product_id]))
    return value_cell(request, value, acted)
