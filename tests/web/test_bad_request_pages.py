"""A bad query string on a list or fragment view (say ?min_confidence=abc) is a 400 a person can
read: the site's 400 page in its layout for a page, the message alone, sent to the page's alert
region, for an htmx fragment; in a real browser the page then shows it."""

import pytest
from django.urls import reverse

from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_scenario
from tests.support.pages import refusal

HTMX = {"HTTP_HX_REQUEST": "true"}

# (view, bad query, what the message must name)
CASES = [
    ("review:queue", {"min_confidence": "abc"}, "min_confidence: expected a number from 0 to 1, got 'abc'"),
    ("review:queue", {"status": "maybe"}, "status: 'maybe' is not one of"),
    ("review:auto_accept", {"min_confidence": "abc"}, "min_confidence: expected a number from 0 to 1"),
    ("review:dashboard", {"run": "abc"}, "Cannot show the run: run:"),
    (
        "review:dashboard",
        {"compare": "abc"},
        "compare: expected a number, the id of a row (1 or more), got 'abc'",
    ),
    ("review:blind_label", {"catalog": "abc"}, "Cannot start blind labelling: catalog:"),
    ("catalog:products", {"catalog": "abc"}, "Cannot filter the products: catalog:"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "query", "says"), CASES, ids=[f"{n} {q}" for n, q, _ in CASES])
def test_a_bad_query_is_a_styled_page_or_a_message_the_page_shows(client_for, alice, name, query, says):
    make_scenario(products=2)
    client = client_for(alice)
    page = client.get(reverse(name), query)
    assert says in refusal(page)
    body = page.content.decode()
    assert '<header class="topbar">' in body and "css/app.css" in body  # the site's layout
    assert "This request cannot be used" in body

    fragment = client.get(reverse(name), query, **HTMX)
    assert says in refusal(fragment)
    assert fragment["HX-Retarget"] == "#page-alert" and fragment["HX-Reswap"] == "innerHTML"
    assert "<header" not in fragment.content.decode()  # the message alone, not a page in a page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_queue_shows_a_refused_filter_in_its_alert_region(live_server, alice, password):
    make_scenario(products=2)
    with chromium_page() as page:
        base = live_server.url
        sign_in(page, base, "alice", password)
        page.goto(f"{base}/review/queue/?min_confidence=abc")
        assert page.inner_text("h1") == "This request cannot be used"
        assert "min_confidence: expected a number from 0 to 1, got 'abc'" in page.inner_text(
            "#bad-request-message"
        )
        assert (
            page.evaluate("getComputedStyle(document.querySelector('.topbar')).display") != "inline"
        )  # styled

        page.goto(f"{base}/review/queue/")
        rows = page.locator("#value-list .vrow").count()
        assert rows > 0
        # what the filter form sends (hx-get to #queue-body) with a value the server refuses
        page.evaluate("htmx.ajax('GET', '/review/queue/?min_confidence=abc', {target: '#queue-body'})")
        alert = page.wait_for_selector("#page-alert #bad-request-message")
        assert "min_confidence: expected a number from 0 to 1, got 'abc'" in alert.inner_text()
        assert page.locator("#value-list .vrow").count() == rows  # the list stays as it was
