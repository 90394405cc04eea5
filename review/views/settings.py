"""A reviewer's own settings: keyboard shortcuts and the GPU price the dashboard uses."""

from decimal import Decimal

from django.contrib import messages
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from review import shortcuts
from review.views.common import redirect_back, reviewers_only, safe_next, settings_of
from slotwise.params import ParameterError, optional_price

PRICE_FIELD = "gpu_price_per_hour"


def _clean_price(params) -> tuple[Decimal | None, str]:
    try:
        return optional_price(params, PRICE_FIELD), ""
    except ParameterError as exc:
        return None, str(exc).removeprefix(f"{PRICE_FIELD}: ")


@require_http_methods(["GET", "POST"])
@reviewers_only
def reviewer_settings(request):
    user_settings = settings_of(request.user)
    keys = shortcuts.effective(user_settings.shortcuts)
    errors: dict[str, str] = {}
    price_text = "" if user_settings.gpu_price_per_hour is None else str(user_settings.gpu_price_per_hour)
    if request.method == "POST":
        submitted = {action: request.POST.get(f"key_{action}", "") for action in shortcuts.ACTIONS}
        price_text = request.POST.get(PRICE_FIELD, "")
        price, price_error = _clean_price(request.POST)
        try:
            cleaned = shortcuts.validate(submitted)
        except shortcuts.ShortcutError as exc:
            errors = dict(exc.errors)
            keys = submitted
        if price_error:
            errors[PRICE_FIELD] = price_error
        if not errors:
            user_settings.shortcuts = {a: k for a, k in cleaned.items() if k != shortcuts.defaults()[a]}
            user_settings.gpu_price_per_hour = price
            user_settings.save()
            messages.success(request, "Saved your review settings.")
            return redirect_back(request, "review:settings")
        keys = submitted
    rows = [
        (action, label, keys.get(action, ""), errors.get(action, ""))
        for action, (label, _) in shortcuts.ACTIONS.items()
    ]
    return render(
        request,
        "review/settings.html",
        {
            "rows": rows,
            "errors": errors,
            "price_text": price_text,
            "next": safe_next(request, request.GET.get("next", "")),
        },
        status=400 if errors else 200,
    )
