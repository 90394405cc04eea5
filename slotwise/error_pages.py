"""The product's own error pages under DEBUG too (`make dev`), as in production.

With DEBUG on, Django answers a 404 with its technical page, which lists every URL pattern of the
site, and a server error with a traceback page. This middleware renders templates/404.html and
500.html instead. The traceback still reaches the console: the error is logged as Django's own
handler would. A refusal (PermissionDenied) gets the 403 page and one log line, DEBUG or not
(slotwise/refusals.py).
"""

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.defaults import page_not_found, server_error

from slotwise.refusals import refused

log = logging.getLogger("django.request")
# Exceptions Django turns into a 400 page of the product's templates whatever DEBUG says.
DJANGOS_OWN_ANSWERS = (BadRequest, SuspiciousOperation)


class ProductErrorPagesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        # No view matched the path: under DEBUG this response is the technical 404.
        if settings.DEBUG and response.status_code == 404 and request.resolver_match is None:
            return page_not_found(request, Http404(request.path))
        return response

    def process_exception(self, request, exception):
        """A view raised: a refusal gets the 403 page and one log line, whatever DEBUG says; under
        DEBUG, Http404 gets the product's 404 page, a server error its 500 page."""
        if isinstance(exception, PermissionDenied):
            return refused(request, str(exception))
        if not settings.DEBUG or isinstance(exception, DJANGOS_OWN_ANSWERS):
            return None  # production's handlers, or a 400 Django renders with its template
        if isinstance(exception, Http404):
            return page_not_found(request, exception)
        log.error("Internal Server Error: %s", request.path, exc_info=exception)
        return server_error(request)


def bad_request(request, message: str) -> HttpResponse:
    """A 400 a person can read, saying what was wrong: the product's 400 page in the site's layout,
    or, for an htmx request (a fragment: a filter, a row, a chart), the message alone, put by
    static/js/page.js into the page's alert region (#page-alert, templates/base.html) instead of
    the fragment it asked for."""
    if request.headers.get("HX-Request") == "true":
        response = render(request, "_bad_request.html", {"message": message}, status=400)
        response["HX-Retarget"] = "#page-alert"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "400.html", {"message": message}, status=400)
