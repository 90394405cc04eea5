"""Only reviewers and admins see review screens and change values; raters get 403 on every one."""

import pytest
from django.urls import reverse

from review.models import BulkAction, ExportJob
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db
# Accepting values nobody looked at is the catalog admin's call (reviewers see the page read-only).
ADMIN_ONLY = {"start_auto_accept": ("admin",)}


def review_urls(scene, bob):
    value = scene.values[0]
    bulk = BulkAction.objects.create(created_by=bob, action="accept", filters={})
    export = ExportJob.objects.create(created_by=bob, format="csv", shape="long", filters={})
    return {
        "get": [
            reverse("review:queue"),
            reverse("review:row", args=[value.pk]),
            reverse("review:history", args=[value.pk]),
            reverse("review:bulk_status", args=[bulk.pk]),
            reverse("review:export_status", args=[export.pk]),
            reverse("review:export_download", args=[export.pk]),
            reverse("review:dashboard"),
            reverse("review:gold_download"),
            reverse("review:settings"),
        ],
        "post": [
            reverse("review:review_value", args=[value.pk]),
            reverse("review:undo"),
            reverse("review:bulk"),
            reverse("review:export"),
            reverse("review:settings"),
        ],
    }


def test_raters_get_403_on_every_review_screen_and_change_nothing(client_for, carol, bob):
    scene = make_scenario(products=2)
    urls = review_urls(scene, bob)
    client = client_for(carol)
    for url in urls["get"]:
        assert client.get(url).status_code == 403, url
    for url in urls["post"]:
        assert client.post(url, {"action": "accept", "version": 0, "run": scene.run.pk}).status_code == 403, (
            url
        )
    assert not scene.run.values.exclude(review__status="pending").exists()


def test_anonymous_users_are_sent_to_sign_in(client, bob):
    scene = make_scenario(products=1)
    urls = review_urls(scene, bob)
    for url in urls["get"] + urls["post"]:
        response = client.post(url) if url in urls["post"] else client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_reviewers_and_admins_may_use_every_screen(client_for, alice, bob):
    scene = make_scenario(products=1)
    urls = review_urls(scene, bob)
    for user in (alice, bob):
        client = client_for(user)
        for url in urls["get"]:
            if "download" in url:
                continue  # that export has no file: 404, tested in tests/review/test_export.py
            assert client.get(url).status_code == 200, (user, url)


def test_every_review_view_states_its_roles():
    from django.urls import get_resolver

    for pattern in get_resolver().url_patterns:
        if getattr(pattern, "namespace", None) == "review":
            for sub in pattern.url_patterns:
                expected = ADMIN_ONLY.get(sub.name, ("admin", "reviewer"))
                assert sub.callback.allowed_roles == expected, sub.name
