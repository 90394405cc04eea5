"""The queue's "most useful to review" order: disagreement and low confidence first, spread over
patterns and brands; products ranked for review the same way (review/usefulness.py)."""

import re

import pytest
from django.test import override_settings
from django.urls import reverse

from extraction.models import ExtractedValue
from review.actions import do_review
from review.filters import QueueFilter, partner_of
from review.opening import open_reviews
from review.useful_order import candidates, ranked
from review.usefulness import Candidate, brand_of, rank_products, rank_values
from tests.support.factories import make_review_choices

pytestmark = pytest.mark.django_db


def rows_in(body: str) -> list[str]:
    return re.findall(r'<form id="value-(\d+)" class="vrow', body)


def ids(scene, *names) -> list[int]:
    return [scene.values[n].pk for n in names]


def test_it_ranks_the_disagreement_first_then_spreads_a_repeated_pattern():
    scene = make_review_choices()
    order, _ = ranked(QueueFilter(run=scene.run.pk), partner_of(scene.run))
    # Zest: confident but AR disagrees; one Bob's Red Mill "Corn Grits", then Acme before the
    # three other Bob's values that repeat the same pattern at the same low confidence.
    assert order == ids(scene, "zest", "bob1", "acme", "bob2", "bob3", "bob4")


def test_without_the_linked_run_it_ranks_by_confidence_and_spread():
    scene = make_review_choices()
    order, _ = ranked(QueueFilter(run=scene.run.pk), partner=None)
    assert order == ids(scene, "bob1", "acme", "bob2", "bob3", "bob4", "zest")


def test_values_cut_by_the_token_budget_still_come_first():
    scene = make_review_choices()
    ExtractedValue.objects.filter(pk=scene.values["bob4"].pk).update(truncated=True)
    open_reviews(ExtractedValue.objects.filter(run=scene.run))  # as the worker writing them does
    order, _ = ranked(QueueFilter(run=scene.run.pk), partner_of(scene.run))
    assert order[:2] == ids(scene, "bob4", "zest")


def test_it_ranks_products_for_review_from_the_same_rows():
    scene = make_review_choices()
    found, _ = candidates(QueueFilter(run=scene.run.pk), partner_of(scene.run))
    products = rank_products(found)
    assert products == [scene.products[n].pk for n in ("zest", "bob1", "acme", "bob2", "bob3", "bob4")]


def test_products_spread_over_brands():
    """Two brands, each product with a distinct value (no repeated pattern): the second-best of a
    brand gives way to the other brand's best although it is slightly more useful."""

    def product(key, brand, confidence):
        return Candidate(key, key, "Flavor", brand, f"value {key}", confidence)

    items = [product(1, "bob", 0.10), product(2, "bob", 0.12), product(3, "acme", 0.2)]
    assert rank_products(items) == [1, 3, 2]
    assert rank_values(items) == [1, 3, 2]


def test_a_brand_is_the_catalogs_own_else_the_titles_first_word():
    assert brand_of("Bob's Red Mill Corn Grits", {}) == "bob's"
    assert brand_of("Corn Grits 24 oz", {"BRAND": " Bob's Red Mill "}) == "bob's red mill"
    assert brand_of("", None) == ""


def test_the_queue_page_shows_the_useful_order_and_others_stay_as_they_were(client_for, bob):
    scene = make_review_choices()
    client = client_for(bob)
    url = reverse("review:queue")

    def first_three(sort):
        body = client.get(url, {"run": scene.run.pk, "sort": sort}).content.decode()
        assert 'value="useful" selected' in body or sort != "useful"
        return [int(i) for i in rows_in(body)[:3]]

    assert first_three("useful") == ids(scene, "zest", "bob1", "acme")
    assert first_three("confidence") == ids(scene, "bob1", "bob2", "bob3")
    assert first_three("disagreement") == ids(scene, "zest", "bob1", "bob2")


@override_settings(REVIEW_PAGE_SIZE=2)
def test_reviewing_a_useful_page_never_reorders_or_skips_the_next(client_for, bob):
    scene = make_review_choices()
    client = client_for(bob)
    url = reverse("review:queue")
    params = {"run": scene.run.pk, "sort": "useful", "status": "pending"}
    first = client.get(url, params).content.decode()
    assert [int(i) for i in rows_in(first)] == ids(scene, "zest", "bob1")
    for value_id in rows_in(first):
        do_review(int(value_id), 0, "accept", bob)
    after = re.search(r'id="next-page" class="button" href="[^"]*&amp;after=(\d+)"', first).group(1)
    second = client.get(url, {**params, "after": after}).content.decode()
    assert [int(i) for i in rows_in(second)] == ids(scene, "acme", "bob2")
    assert "1–2 of 4" in second  # what is still pending, counted from the start
    before = re.search(r'id="prev-page" class="button" href="[^"]*&amp;before=(\d+)"', second)
    assert before is None  # nothing pending before it any more
    third = client.get(url, {**params, "after": ids(scene, "bob2")[0]}).content.decode()
    assert [int(i) for i in rows_in(third)] == ids(scene, "bob3", "bob4")
    assert 'id="prev-page"' in third and 'id="next-page"' not in third


def test_a_cursor_that_is_not_in_the_useful_queue_is_a_clear_error(client_for, bob):
    scene = make_review_choices()
    response = client_for(bob).get(
        reverse("review:queue"), {"run": scene.run.pk, "sort": "useful", "after": "999999999"}
    )
    assert response.status_code == 400
    assert "is not a position in this queue" in response.content.decode()
