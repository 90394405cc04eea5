"""What every signed-in page carries for its role: the nav, the icon, the product's own 403 and
404 pages, and the admin's status page."""

import re

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.urls import reverse


def test_it_shows_health_of_database_and_redis(client_for, alice):
    response = client_for(alice).get(reverse("health:status"))
    body = response.content.decode()
    assert re.search(
        r'<tr class="ok"><td>PostgreSQL</td><td>OK</td><td>PostgreSQL 16\.\d+[^<]*</td></tr>', body
    )
    assert re.search(r'<tr class="ok"><td>Redis</td><td>OK</td><td>Redis 6\.\d+\.\d+</td></tr>', body)


@pytest.mark.django_db
def test_every_page_links_an_icon_that_exists(client):
    """QA: browsers asked for /favicon.ico on every page and got a 404 in the console."""
    page = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/favicon.svg"' in page
    assert finders.find("favicon.svg") is not None


def _nav_links(body: str) -> list[str]:
    nav = body[body.index("<nav>") : body.index("</nav>")]
    return re.findall(r'href="([^"]+)"', nav)


def test_the_nav_links_every_page_a_role_may_open_and_none_it_may_not(client_for, alice, bob, carol):
    """QA: reviewers may read schemas and watch runs, but the nav hid both from them."""
    expected = {
        alice: [
            "/catalog/products/",
            "/catalog/schemas/",
            "/catalog/upload/",
            "/runs/",
            "/review/queue/",
            "/status/",
        ],
        bob: ["/catalog/products/", "/catalog/schemas/", "/runs/", "/review/queue/", "/review/dashboard/"],
        carol: ["/ab/my_campaigns/"],
    }
    for user, must_have in expected.items():
        client = client_for(user)
        links = _nav_links(
            client.get(
                reverse("evaluation:my_campaigns" if user == carol else "catalog:products")
            ).content.decode()
        )
        assert set(must_have) <= set(links), (user.username, links)
        for href in links:
            ok = {200, 503} if href == reverse("health:status") else {200}  # 503: no worker in this test
            assert client.get(href).status_code in ok, (user.username, href)
    bob_links = _nav_links(client_for(bob).get(reverse("catalog:products")).content.decode())
    assert (
        "/catalog/upload/" not in bob_links and "/status/" not in bob_links
    )  # the status page is for admins


def test_a_forbidden_or_missing_page_explains_itself_inside_the_app(client_for, bob):
    """QA: a reviewer opening Upload got a bare "403 Forbidden" with no way back."""
    client = client_for(bob)
    response = client.get(reverse("catalog:upload"))
    body = response.content.decode()
    assert response.status_code == 403
    assert "<h1>This page is not open to your role</h1>" in body
    assert (
        "<p>This page is for: admin. You are signed in as <strong>bob</strong> (reviewer); "
        "ask an admin if you need access.</p>"
    ) in body
    assert _nav_links(body)[0] == reverse("catalog:products")  # the app's own nav, not a bare page
    response = client.get("/catalog/products/999999/")
    body = response.content.decode()
    assert response.status_code == 404 and "<h1>Nothing here</h1>" in body
    assert "No page at <code>/catalog/products/999999/</code>" in body
    # renders without a request
    assert "<h1>Something went wrong on our side</h1>" in render_to_string("500.html")
