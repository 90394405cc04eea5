"""Helpers the review views share: who may use them, the reviewer's settings, where to go back."""

from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from accounts.roles import ADMIN, REVIEWER, role_required
from review import shortcuts
from review.models import ReviewerSettings

# Only reviewers and admins see or change review screens; raters get 403 everywhere here.
reviewers_only = role_required(ADMIN, REVIEWER)


def settings_of(user) -> ReviewerSettings:
    found = ReviewerSettings.objects.filter(user=user).first()
    return found or ReviewerSettings(user=user)


def shortcut_keys(user) -> dict[str, str]:
    return shortcuts.effective(settings_of(user).shortcuts)


def safe_next(request, target: str) -> str:
    """`target` when it is a page of this site, else "" (never an open redirect or a javascript: link).

    Only a path from the site's root: redirect() would take a bare word ("²") for a URL name."""
    if not target.startswith("/"):
        return ""
    ok = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and ok else ""


def redirect_back(request, fallback: str = "review:queue"):
    """Back to the page the form came from (`next`), when it is a page of this site."""
    return redirect(safe_next(request, request.POST.get("next", "")) or fallback)
