"""The Content-Security-Policy header on every response (Django 5.2 has none of its own).

Scripts only from this site's static files: a stored script payload that got past escaping still
could not run, nor could an inline handler. Styles may be inline (style attributes in templates,
htmx's indicator style). Pages use no inline script and no on* attribute
(tests/web/test_security_headers.py checks the templates).
"""

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
