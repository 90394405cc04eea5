"""A refused request (403): the product's 403 page, and one line in the log saying who asked for
what and why.

Django logs a PermissionDenied with its traceback, one per refusal: routine refusals (a rater
opening a reviewer's page) then fill the error log with tracebacks and bury real errors. A refusal
is expected behaviour, so its line carries what an operator needs and nothing else.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.log import log_response

from slotwise.client_address import client_address


def refused(request: HttpRequest, reason: str) -> HttpResponse:
    response = render(request, "403.html", {"exception": reason}, status=403)
    # Logged on django.request, as Django logs a refusal, and marked logged so Django does not log
    # it again; log_response escapes the path and reason, so the record stays one line.
    log_response(
        "Refused %s %s for %s at %s: %s",
        request.method,
        request.path,
        requester(request),
        client_address(request),
        reason or "no reason given",
        response=response,
        request=request,
    )
    return response


def requester(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return user.get_username() if user is not None and user.is_authenticated else "anonymous"
