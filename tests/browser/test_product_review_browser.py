"""In a browser: the product list says how far each product's review has come and filters by it; a
product's page shows each value's review state and the run that wrote it (a picker between two
runs), and a reviewer accepts, corrects and sets n/a in place, a conflict saying who changed it."""

import pytest
from playwright.sync_api import expect

from catalog.views import products as product_views
from extraction.models import ExtractedValue, Run
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import QueueFilter
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_run, make_scenario, make_values

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


def test_a_reviewer_picks_a_run_on_the_product_page_and_reviews_its_values_in_place(
    live_server, bob, alice, password
):
    scene = make_scenario(products=1, attributes=("Brand", "Color", "Size", "Fit"))
    product = scene.products[0]
    hpd = {v.attribute.name: v for v in scene.values}
    ar = make_run([product], scene.schema, decoder=Run.Decoder.AR)  # newer: the page opens on it
    make_values(ar, {(product, a): (f"ar {a.name.lower()}", 0.6) for a in scene.attributes.values()})
    run_bulk_action(do_create_bulk_action(QueueFilter(run=scene.run.pk, attribute="Fit"), "accept", bob).pk)

    def cell(value):
        return page.locator(f"#product-value-{value.pk}")

    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/catalog/products/{product.pk}/")
        expect(page.locator("#id_run")).to_have_value(str(ar.pk))
        expect(page.locator("#product-attributes .pvalue .shown")).to_have_text(
            ["ar brand", "ar color", "ar size", "ar fit"]
        )
        page.select_option("#id_run", str(scene.run.pk))
        page.wait_for_url(lambda url: f"run={scene.run.pk}" in url)
        expect(page.locator("#product-attributes .pvalue")).to_have_count(4)
        expect(page.locator("#product-attributes .pvalue .badge.state")).to_have_text(
            ["pending", "pending", "pending", "accepted in bulk"]
        )
        page.evaluate("window.__samePage = true")  # lost if the page reloads

        cell(hpd["Brand"]).locator("button.accept").click()
        expect(cell(hpd["Brand"])).to_have_attribute("data-state", "accepted")
        cell(hpd["Color"]).locator("summary").click()
        cell(hpd["Color"]).locator("input[name=value]").fill("Teal")
        cell(hpd["Color"]).locator("input[name=value]").press("Enter")  # saves the correction, never accepts
        expect(cell(hpd["Color"])).to_have_attribute("data-state", "corrected")
        expect(cell(hpd["Color"]).locator(".shown")).to_have_text("Teal")
        cell(hpd["Size"]).locator("button.na").click()
        expect(cell(hpd["Size"])).to_have_attribute("data-state", "n/a")

        do_review(hpd["Brand"].pk, 1, "correct", alice, text="Acme")  # alice, meanwhile
        cell(hpd["Brand"]).locator("button.na").click()
        expect(cell(hpd["Brand"]).locator("[role=alert]")).to_contain_text(
            "alice changed this value while you were looking at it"
        )
        expect(cell(hpd["Brand"])).to_have_attribute("data-state", "corrected")
        expect(cell(hpd["Brand"]).locator(".shown")).to_have_text("Acme")
        cell(hpd["Brand"]).locator("button.na").click()  # a second try, at the version now shown
        expect(cell(hpd["Brand"])).to_have_attribute("data-state", "n/a")
        expect(cell(hpd["Brand"]).locator("[role=alert]")).to_have_count(0)
        assert page.evaluate("window.__samePage") is True  # every change came back in place

    reviews = dict(
        ExtractedValue.objects.filter(run=scene.run).values_list("attribute__name", "review__status")
    )
    assert reviews == {"Brand": "corrected", "Color": "corrected", "Size": "corrected", "Fit": "accepted"}
    reviewed = dict(
        ExtractedValue.objects.filter(run=scene.run).values_list("attribute__name", "review__reviewed_value")
    )
    assert (reviewed["Brand"], reviewed["Color"], reviewed["Size"]) == ("n/a", "Teal", "n/a")
    assert not ExtractedValue.objects.filter(run=ar).exclude(review__status="pending").exists()
