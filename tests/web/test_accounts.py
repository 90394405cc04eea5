import re

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.urls import reverse


@pytest.mark.django_db
def test_it_sends_anonymous_users_to_login(client):
    response = client.get(reverse("workers:status"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_shows_health_of_database_and_redis(client_for, alice):
    response = client_for(alice).get(reverse("workers:status"))
    body = response.content.decode()
    assert "PostgreSQL 16" in body
    assert "Redis 6" in body


def test_it_signs_in_with_password(client, bob, password):
    response = client.post(reverse("login"), {"username": "bob", "password": password})
    assert response.status_code == 302
    response = client.post(reverse("login"), {"username": "bob", "password": "wrong"})
    assert "didn't match" in response.content.decode()


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
            ok = {200, 503} if href == reverse("workers:status") else {200}  # 503: no worker in this test
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
    assert "This page is not open to your role" in body and "This page is for: admin" in body
    assert "<nav>" in body and "bob" in body
    response = client.get("/catalog/products/999999/")
    assert response.status_code == 404 and "Nothing here" in response.content.decode()
    assert "Something went wrong" in render_to_string("500.html")  # renders without a request
