"""Reading what a page shows a person, for the tests' assertions."""

import re
from html import unescape


def refusal(response) -> str:
    """The message of a 400 answer as a person reads it (templates/400.html, or the htmx fragment
    templates/_bad_request.html); AssertionError when the answer is not such a page."""
    body = response.content.decode()
    found = re.search(r'id="bad-request-message">(.*?)</p>', body, re.S)
    assert response.status_code == 400 and found, f"{response.status_code}: {body[:500]}"
    return " ".join(unescape(found.group(1)).split())
