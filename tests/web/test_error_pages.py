"""404, 403 and 500 are the product's own pages, with DEBUG off and on (`make dev`)."""

import pytest
from django.urls import path, reverse

from slotwise.urls import urlpatterns as product_urls


def boom(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), *product_urls]


@pytest.mark.urls("tests.web.test_error_pages")
@pytest.mark.parametrize("debug", [False, True])
def test_missing_forbidden_and_broken_pages_are_the_products_own(client_for, bob, settings, debug):
    settings.DEBUG = debug
    client = client_for(bob)
    client.raise_request_exception = False
    for missing in ("/no/such/page/", "/catalog/products/999999/"):  # no pattern; a view's Http404
        response = client.get(missing)
        body = response.content.decode()
        assert response.status_code == 404 and "Nothing here" in body and "<nav>" in body, missing
        assert "URLconf" not in body and "auto-accept/start/" not in body  # no list of URL patterns
    forbidden = client.get(reverse("health:status"))
    assert forbidden.status_code == 403 and "This page is not open to your role" in forbidden.content.decode()
    broken = client.get("/boom/")
    assert broken.status_code == 500 and "Something went wrong on our side" in broken.content.decode()
    assert "Traceback" not in broken.content.decode()


def test_the_status_page_is_for_admins_only(client_for, alice, bob, carol):
    assert client_for(alice).get(reverse("health:status")).status_code in (200, 503)  # 503: no worker here
    for user in (bob, carol):
        response = client_for(user).get(reverse("health:status"))
        assert response.status_code == 403 and "This page is for: admin" in response.content.decode()
