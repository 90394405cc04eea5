"""The page django-axes shows once a username has failed to sign in too often from one address, and
the name it counts a sign-in under."""

from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.shortcuts import render
from django.utils import timezone
from django.utils.timesince import timeuntil


def locked_out(request, original_response=None, credentials=None):
    """429 with the sign-in page's look: how many failures locked it and how long the lock lasts.

    Every refused attempt during a lock starts the cool-off again (AXES_RESET_COOL_OFF_ON_FAILURE_
    DURING_LOCKOUT), so the full cool-off is what is left at the moment this page is shown.
    """
    now = timezone.now()
    context = {
        "failure_limit": settings.AXES_FAILURE_LIMIT,
        "cool_off": timeuntil(now + get_cool_off(request), now),
    }
    return render(request, "accounts/locked_out.html", context, status=429)


def throttled_username(request, credentials=None) -> str | None:
    """The name typed, as django-axes reads it, cut to what its failure record's column stores.

    No account's name is that long (150 at most), so a longer one is an ordinary failed sign-in,
    counted under its first characters; uncut, its record's insert failed (a server error for anyone).
    """
    source = credentials or getattr(request, "data", request.POST)
    username = source.get(settings.AXES_USERNAME_FORM_FIELD)
    if username is None:
        return None
    return username[: AccessAttempt._meta.get_field("username").max_length]
