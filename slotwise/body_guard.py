"""Refuse a request body before anything reads it: too large for its view, or from someone the view
would turn away.

Django's CSRF check reads `request.POST` before any view runs, and reading a multipart form writes
each file over FILE_UPLOAD_MAX_MEMORY_SIZE to a temporary file: a 200 MB body was spooled to disk
before the upload view refused it, by anyone, signed in or not. This middleware runs ahead of CSRF
and looks only at the path, the session and Content-Length:

- a body over its view's limit is answered 413 (the view's own page when it offers one, see
  `body_limit`); every other view takes forms up to DEFAULT_BODY_BYTES;
- a body larger than any plain form (SMALL_BODY_BYTES) from someone not signed in (the sign-in page
  for a page that needs it, 413 for the sign-in page itself), or to a view not open to the user's
  role (403), is answered without being read.

A body sent without Content-Length (chunked) is never read by Django at all (it reads
CONTENT_LENGTH bytes), so it needs no check here. How long a client may take to send a body is
bounded by the web server (gunicorn.conf.py).
"""

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.urls import Resolver404, resolve

from accounts.roles import has_role
from slotwise.refusals import refused

BODY_METHODS = {"POST", "PUT", "PATCH"}
# The sign-in form, a review action, a mapping of a thousand columns: all far below this.
SMALL_BODY_BYTES = 256 * 1024
# multipart boundaries and the other fields of a form that carries a file
FORM_OVERHEAD_BYTES = 64 * 1024


def default_body_bytes() -> int:
    """What a view without a limit of its own takes (its files: a schema, a system's outputs)."""
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE + FORM_OVERHEAD_BYTES


def body_limit(max_bytes: Callable[[], int], too_large: Callable | None = None) -> Callable:
    """Declare a view's body limit (read when a request comes, so settings may change it) and,
    optionally, `too_large(request, length)`: the view's own 413 page."""

    def decorator(view):
        view.max_body_bytes = max_bytes
        view.body_too_large = too_large
        return view

    return decorator


def content_length(request) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # Django reads no body for a Content-Length it cannot parse either


class RefuseUnwantedBodiesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        length = content_length(request) if request.method in BODY_METHODS else 0
        refusal = self.refusal(request, length) if length else None
        return refusal or self.get_response(request)

    def refusal(self, request, length: int):
        try:
            view = resolve(request.path_info).func
        except Resolver404:
            return None  # a 404 without a view reads no body
        limit = getattr(view, "max_body_bytes", default_body_bytes)()
        if length > limit:
            too_large = getattr(view, "body_too_large", None)
            if too_large is not None:
                return too_large(request, length)
            message = f"The request is {length:,} bytes; this page takes at most {limit:,}."
            return render(request, "400.html", {"message": message}, status=413)
        if length <= SMALL_BODY_BYTES:
            return None
        if not request.user.is_authenticated:
            if getattr(view, "login_required", True):
                return redirect_to_login(request.get_full_path())
            # The sign-in page is open to all: no form of it is this large.
            message = f"The request is {length:,} bytes; a form sent before signing in takes at most {SMALL_BODY_BYTES:,}."
            return render(request, "400.html", {"message": message}, status=413)
        roles = getattr(view, "allowed_roles", None)
        if roles and not has_role(request.user, *roles):
            return refused(request, f"this page is for: {', '.join(roles)}")
        return None
