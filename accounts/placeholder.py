"""Temporary pages for URLs whose screens are being built (each app replaces its own)."""

from django.http import HttpResponse

from accounts.roles import ADMIN, RATER, REVIEWER, role_required


@role_required(ADMIN, REVIEWER, RATER)
def not_built_yet(request, *args, **kwargs):
    return HttpResponse("This screen is not built yet.", status=501)
