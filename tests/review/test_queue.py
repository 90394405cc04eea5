"""The review queue: ordering, filters, the document beside the values, htmx partials."""

import re

import pytest
from django.test import override_settings
from django.urls import reverse

from extraction.models import ExtractedValue, Run
from review.actions import do_review
from review.opening import open_reviews
from tests.support.factories import link_runs, make_run, make_scenario, make_values

pytestmark = pytest.mark.django_db


def rows_in(body: str) -> list[str]:
    """The value ids of the rows, in page order."""
    import re

    return re.findall(r'<form id="value-(\d+)" class="vrow', body)


def test_it_lists_lowest_confidence_first_with_document_and_highlight(client_for, bob):
    scene = make_scenario(products=3)
    body = client_for(bob).get(reverse("review:queue"), {"run": scene.run.pk}).content.decode()
    expected = [str(v.pk) for v in sorted(scene.values, key=lambda v: (v.confidence, v.pk))]
    assert rows_in(body) == expected
    assert '<mark class="span">brand0</mark>' in body  # the span, highlighted in the document
    assert "Item 0 brand0 color0" in body


def test_values_cut_by_the_token_budget_come_first_on_every_sort_and_page(client_for, bob):
    scene = make_scenario(products=5)
    by_confidence = sorted(scene.values, key=lambda v: (v.confidence, v.pk))
    cut = [by_confidence[-1], by_confidence[4]]  # the most confident and a middle one
    ExtractedValue.objects.filter(pk__in=[v.pk for v in cut]).update(truncated=True)
    open_reviews(ExtractedValue.objects.filter(run=scene.run))  # as the worker writing them does
    expected = [str(v.pk) for v in sorted(cut, key=lambda v: v.confidence)] + [
        str(v.pk) for v in by_confidence if v not in cut
    ]
    client = client_for(bob)
    with override_settings(REVIEW_PAGE_SIZE=3):
        first = client.get(reverse("review:queue"), {"run": scene.run.pk}).content.decode()
        after = re.search(r'id="next-page" class="button" href="[^"]*&amp;after=([^"&]+)"', first).group(1)
        second = client.get(reverse("review:queue"), {"run": scene.run.pk, "after": after}).content.decode()
    assert rows_in(first) + rows_in(second)[:3] == expected[:6]
    assert first.count('<span class="cut" title=') == 2  # both marked with the scissors


def test_it_filters_by_attribute_status_catalog_and_category(client_for, bob):
    scene = make_scenario(products=4)
    other = make_scenario(products=2, category="Coffee", attributes=("Roast",))
    brand = [v for v in scene.values if v.attribute.name == "Brand"]
    do_review(brand[0].pk, 0, "accept", bob)
    client = client_for(bob)
    q = reverse("review:queue")
    assert len(rows_in(client.get(q, {"run": scene.run.pk, "attribute": "Brand"}).content.decode())) == 4
    accepted = rows_in(client.get(q, {"run": scene.run.pk, "status": "accepted"}).content.decode())
    assert accepted == [str(brand[0].pk)]
    assert rows_in(client.get(q, {"run": scene.run.pk, "catalog": other.catalog.pk}).content.decode()) == []
    assert (
        rows_in(client.get(q, {"run": scene.run.pk, "category": other.schema.category.pk}).content.decode())
        == []
    )
    assert (
        len(
            rows_in(
                client.get(q, {"run": other.run.pk, "category": other.schema.category.pk}).content.decode()
            )
        )
        == 2
    )


def test_it_sorts_by_disagreement_with_the_linked_run(client_for, bob):
    scene = make_scenario(products=3, attributes=("Brand",))
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    brand = scene.attributes["Brand"]
    # The AR run agrees on products 0 and 2 and disagrees on product 1 (highest confidence there).
    make_values(
        ar, {(p, brand): ("other" if i == 1 else f"brand{i}", 0.9) for i, p in enumerate(scene.products)}
    )
    link_runs(scene.run, ar)
    body = (
        client_for(bob)
        .get(reverse("review:queue"), {"run": scene.run.pk, "sort": "disagreement"})
        .content.decode()
    )
    ids = rows_in(body)
    assert ids[0] == str(scene.values[1].pk)
    assert "≠ other" in body
    # From the AR side the link is found too.
    body = (
        client_for(bob).get(reverse("review:queue"), {"run": ar.pk, "sort": "disagreement"}).content.decode()
    )
    assert "≠ brand1" in body


def next_link(body: str) -> str:
    import html
    import re

    return html.unescape(re.search(r'id="next-page" class="button" href="([^"]+)"', body).group(1))


@override_settings(REVIEW_PAGE_SIZE=5)
def test_it_pages_and_htmx_gets_only_the_body(client_for, bob):
    scene = make_scenario(products=6)  # 12 values
    client = client_for(bob)
    url = reverse("review:queue")
    first = client.get(url, {"run": scene.run.pk}).content.decode()
    assert "1–5 of 12" in first
    second = client.get(url + next_link(first)).content.decode()
    assert "6–10 of 12" in second
    partial = client.get(
        url + next_link(second), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue-body"
    ).content.decode()
    assert "<html" not in partial and len(rows_in(partial)) == 2 and "11–12 of 12" in partial
    assert 'id="next-page"' not in partial and 'id="prev-page"' in partial
    seen = rows_in(first) + rows_in(second) + rows_in(partial)
    assert seen == [str(v.pk) for v in sorted(scene.values, key=lambda v: (v.confidence, v.pk))]


@override_settings(REVIEW_PAGE_SIZE=5)
def test_reviewing_a_pending_page_never_skips_values_on_the_next(client_for, bob):
    """Accepted values leave the 'pending' filter; the next page still starts right after them."""
    scene = make_scenario(products=6)
    client = client_for(bob)
    url = reverse("review:queue")
    first = client.get(url, {"run": scene.run.pk, "status": "pending"}).content.decode()
    for value_id in rows_in(first):
        do_review(int(value_id), 0, "accept", bob)
    second = client.get(url + next_link(first)).content.decode()
    ordered = [str(v.pk) for v in sorted(scene.values, key=lambda v: (v.confidence, v.pk))]
    assert rows_in(second) == ordered[5:10]
    assert "1–5 of 7" in second  # what is still pending, counted from the start


def test_a_broken_page_cursor_is_a_clear_error(client_for, bob):
    scene = make_scenario(products=1)
    response = client_for(bob).get(reverse("review:queue"), {"run": scene.run.pk, "after": "abc"})
    assert response.status_code == 400 and "page cursor" in response.content.decode()


def test_a_page_cursor_with_non_ascii_digits_is_refused(client_for, bob):
    scene = make_scenario(products=1)
    value = scene.values[0]
    confidence = repr(value.confidence)
    client = client_for(bob)
    after = f"False_{confidence}_{value.pk}"  # what key_of writes: cut, confidence, id
    assert client.get(reverse("review:queue"), {"run": scene.run.pk, "after": after}).status_code == 200
    wide = confidence.translate(str.maketrans("0123456789", "０１２３４５６７８９"))  # float() reads them
    response = client.get(reverse("review:queue"), {"run": scene.run.pk, "after": f"False_{wide}_{value.pk}"})
    assert response.status_code == 400 and "page cursor" in response.content.decode()


def test_it_says_which_filter_is_wrong(client_for, bob):
    make_scenario(products=1)
    response = client_for(bob).get(reverse("review:queue"), {"status": "done", "run": "x"})
    assert response.status_code == 400
    assert "status" in response.content.decode()
    response = client_for(bob).get(reverse("review:queue"), {"run": "999999"})
    assert "there is no run 999999" in response.content.decode()


def test_it_lists_the_shortcuts_on_the_page(client_for, bob):
    make_scenario(products=1)
    body = client_for(bob).get(reverse("review:queue")).content.decode()
    for label in (
        "Next value",
        "Previous value",
        "Accept",
        "Edit",
        "Set n/a",
        "Undo my last change",
        "Reject",
    ):
        assert label in body
    assert '"accept": "a"' in body  # the keys the script reads
