"""The product list says how far each product's review has come and filters by it, in a browser."""

import pytest
from playwright.sync_api import expect

from catalog.views import products as product_views
from review.actions import do_review
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_scenario

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_product_list_shows_review_state_and_filters_by_it_across_pages(
    live_server, bob, password, monkeypatch
):
    scene = make_scenario(products=3)  # S0000..S0002, Brand and Color each
    done, half, _untouched = ([v for v in scene.values if v.product == p] for p in scene.products)
    do_review(done[0].pk, 0, "accept", bob)
    do_review(done[1].pk, 0, "correct", bob, text="Teal")
    do_review(half[0].pk, 0, "accept", bob)
    monkeypatch.setattr(product_views, "PRODUCTS_PER_PAGE", 1)  # the filter must survive paging
    skus = "#products tbody td:first-child a"
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/catalog/products/")
        expect(page.locator("#products tbody .review-state")).to_have_text(
            ["2 of 2 values reviewed · 1 corrected"]
        )

        page.select_option("#id_review", "reviewed")
        expect(page.locator(skus)).to_have_text(["S0000"])
        expect(page.locator("#result-count")).to_have_text("1 product")

        page.select_option("#id_review", "needs-review")
        expect(page.locator(skus)).to_have_text(["S0001"])
        expect(page.locator("#products tbody .review-state")).to_have_text(["1 of 2 values reviewed"])
        page.click("a[rel=next]")
        page.wait_for_url(lambda url: "page=2" in url)
        assert "review=needs-review" in page.url
        expect(page.locator(skus)).to_have_text(["S0002"])
        expect(page.locator("#products tbody .review-state")).to_have_text(["0 of 2 values reviewed"])
        expect(page.locator("#id_review")).to_have_value("needs-review")

        response = page.goto(f"{live_server.url}/catalog/products/?review=done")
        assert response.status == 400
        assert "review: expected one of all, needs-review, reviewed, got 'done'" in page.inner_text("body")
