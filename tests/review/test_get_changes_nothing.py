"""No review view changes state on GET: every route of review's URL map, opened with GET by a
reviewer and by an admin (with the query a page would send), leaves every stored row as it was."""

import re

import pytest
from django.apps import apps
from django.urls import URLPattern, reverse

from extraction.models import ExtractedValue
from review import urls as review_urls
from review.actions import do_review
from review.models import BulkAction, ExportJob
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db


def stored_rows() -> dict[str, frozenset]:
    """Every row of review's tables and of the values they review, every column of each (as repr:
    JSON columns are not hashable)."""
    models = [*apps.get_app_config("review").get_models(), ExtractedValue]
    return {
        m._meta.label: frozenset(
            repr(row) for row in m.objects.values_list(*(f.attname for f in m._meta.concrete_fields))
        )
        for m in models
    }


def get_urls(scene, bob) -> list[str]:
    """Each review route with its arguments filled from the scene, and the query its page sends."""
    value = scene.values[0]
    ids = {
        "value_id": value.pk,
        "product_id": scene.products[0].pk,
        "bulk_status": BulkAction.objects.create(created_by=bob, action="accept", filters={}).pk,
        "export": ExportJob.objects.create(created_by=bob, format="csv", shape="long", filters={}).pk,
    }
    query = f"?run={scene.run.pk}&catalog={scene.catalog.pk}&target=98"
    found = []
    for pattern in review_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        names = re.findall(r"<int:(\w+)>", str(pattern.pattern))
        if names == ["job_id"]:
            args = [ids["bulk_status"] if pattern.name == "bulk_status" else ids["export"]]
        else:
            args = [ids[name] for name in names]
        found.append(reverse(f"review:{pattern.name}", args=args) + query)
    return found


def test_no_review_view_changes_anything_on_get(client_for, alice, bob):
    scene = make_scenario(products=3)
    do_review(scene.values[1].pk, 0, "correct", bob, text="Kept")  # some history and gold to show
    urls = get_urls(scene, bob)
    assert len(urls) == len(review_urls.urlpatterns) and len(urls) > 15  # the whole map, not a part
    before = stored_rows()
    for user in (bob, alice):
        client = client_for(user)
        for url in urls:
            status = client.get(url).status_code
            assert status in (200, 400, 403, 404, 405), (user.username, url, status)
            assert stored_rows() == before, f"GET {url} as {user.username} changed stored rows"
