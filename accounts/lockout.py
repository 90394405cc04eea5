"""The page django-axes shows once a username has failed to sign in too often from one address."""

from axes.helpers import get_cool_off
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
