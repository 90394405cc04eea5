"""Checks every request passes before any view runs.

PostgreSQL cannot store a NUL character in text, so a parameter holding one would fail deep in a
query (a server error) on whichever view reads it. One check here answers 400 for all of them.
"""

from slotwise.error_pages import bad_request

NUL = "\x00"


def nul_parameter(request) -> str:
    """A message naming the first query or form parameter that holds a NUL, or "".

    Uploaded file names need no check: Django's multipart parser drops unprintable characters.
    """
    sources = [("query", request.GET)]
    if request.method == "POST":
        sources.append(("form", request.POST))
    for source, params in sources:
        for name, values in params.lists():
            if NUL in name or any(NUL in value for value in values):
                return f"the {source} parameter {name!r} holds a NUL character (\\x00)"
    return ""


class RefuseNulParametersMiddleware:
    """Answer 400 with the parameter's name when any parameter holds a NUL character.

    It runs as a view middleware, after the CSRF check has read the form and after the login
    check, so an anonymous request is still sent to the login page first.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        problem = nul_parameter(request)
        if not problem:
            return None
        message = f"Bad request: {problem}, which no text field can store. Remove it and try again."
        return bad_request(request, message)
