"""Product browser: filters by catalog, category and text; pagination; a product's page."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.models import Catalog, Product
from catalog.schemas import AttributeData
from catalog.views.products import CORRECTED, PENDING, PRODUCTS_PER_PAGE
from extraction.models import Run
from review.actions import do_review
from review.models import ValueReview
from tests.support.catalog import make_category
from tests.support.factories import make_scenario, make_value


@pytest.fixture
def shelves(db):
    tv = make_category("TV", AttributeData("Brand"), AttributeData("Screen size", kind="number", unit="in"))
    shoes = make_category("Shoes", AttributeData("Brand"))
    shop, outlet = Catalog.objects.create(name="Shop"), Catalog.objects.create(name="Outlet")
    Product.objects.bulk_create(
        [Product(catalog=shop, sku=f"TV{n:03d}", title=f"Acme TV {n}", category=tv) for n in range(60)]
        + [Product(catalog=shop, sku="SH1", title="Crocs Jayna Ballet Flat", category=shoes)]
        + [
            Product(
                catalog=outlet,
                sku="SH2",
                title="Timberland Radler Oxford",
                description="Lime, leather",
                category=shoes,
            )
        ]
    )
    return tv, shoes, shop, outlet


def listed(response) -> list[str]:
    return [p.sku for p in response.context["page"]]


def test_it_filters_by_catalog_category_and_text(client_for, bob, shelves):
    tv, shoes, shop, outlet = shelves
    client = client_for(bob)
    url = reverse("catalog:products")
    assert listed(client.get(url, {"catalog": outlet.pk})) == ["SH2"]
    assert listed(client.get(url, {"catalog": shop.pk, "category": shoes.pk})) == ["SH1"]
    assert listed(client.get(url, {"q": "ballet"})) == ["SH1"]
    assert listed(client.get(url, {"q": "leather"})) == ["SH2"]  # descriptions are searched too
    assert listed(client.get(url, {"q": "tv007"})) == ["TV007"]  # an exact SKU
    refused = client.get(url, {"catalog": "x"})  # a bad filter value is named, not a 500
    assert refused.status_code == 400 and "catalog: expected a number" in refused.content.decode()


def test_it_paginates_keeping_the_filters(client_for, bob, shelves):
    tv = shelves[0]
    client = client_for(bob)
    first = client.get(reverse("catalog:products"), {"category": tv.pk})
    assert len(listed(first)) == PRODUCTS_PER_PAGE
    body = first.content.decode()
    assert "Page 1 of 2" in body and f'href="?category={tv.pk}&amp;page=2"' in body
    second = client.get(reverse("catalog:products"), {"category": tv.pk, "page": 2})
    assert listed(second) == [f"TV{n:03d}" for n in range(PRODUCTS_PER_PAGE, 60)]


def test_it_answers_htmx_filter_requests_with_the_results_only(client_for, bob, shelves):
    response = client_for(bob).get(reverse("catalog:products"), {"q": "ballet"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="product-results">')
    assert "1 product matching" in body and "<html" not in body


def test_it_shows_a_product_with_document_known_and_extracted_values(client_for, bob, shelves):
    tv = shelves[0]
    product = Product.objects.get(sku="TV007")
    product.description = "55 inch, black"
    product.known_values = {"Brand": "Acme", "Warranty": "2 years"}
    product.save()
    run = Run.objects.create(decoder="hpd", model_dir="models/x")
    size = tv.current_schema.attributes.get(name="Screen size")
    make_value(run, product, size, "55", confidence=0.93)  # with its review, as every writer opens it
    body = client_for(bob).get(reverse("catalog:product", args=[product.pk])).content.decode()
    assert "Acme TV 7\n55 inch, black</pre>" in body
    assert "<td>Acme</td>" in body
    assert (
        '<tr class="muted"><td>Warranty <span class="small">(not in schema)</span></td><td>2 years</td>'
        in body
    )
    assert '<span class="shown">55</span>' in body and "confidence 0.93" in body


def test_it_keeps_raters_out_of_the_product_browser(client_for, carol, shelves):
    client = client_for(carol)
    assert client.get(reverse("catalog:products")).status_code == 403
    assert client.get(reverse("catalog:product", args=[Product.objects.first().pk])).status_code == 403


def test_it_filters_by_review_state_in_one_query_for_the_page(client_for, bob):
    scene = make_scenario(products=12)
    done = [v for v in scene.values if v.product == scene.products[0]]
    for value in done:
        do_review(value.pk, 0, "accept", bob)
    client = client_for(bob)
    url = reverse("catalog:products")
    assert listed(client.get(url, {"review": "reviewed"})) == ["S0000"]
    assert listed(client.get(url, {"review": "needs-review"})) == [f"S{n:04d}" for n in range(1, 12)]
    assert len(listed(client.get(url, {"review": "all"}))) == 12
    shown = client.get(url, {"review": "reviewed"}).context["page"][0]
    assert (shown.value_count, shown.reviewed_count, shown.corrected_count) == (2, 2, 0)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        return len(captured)

    twelve = queries()
    make_scenario(products=20)  # more products and values: the same queries, none per row
    assert queries() == twelve
    refused = client.get(url, {"review": "done"})
    assert refused.status_code == 400
    assert (
        "review: expected one of all, needs-review, reviewed, got &#x27;done&#x27;"
        in refused.content.decode()
    )


def test_the_statuses_the_list_counts_by_name_are_the_review_apps():
    assert (PENDING, CORRECTED) == (ValueReview.Status.PENDING, ValueReview.Status.CORRECTED)
