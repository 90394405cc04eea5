"""Accept, correct and n/a in place on the product page: the queue's transition (history, gold,
version check) answered with the value's cell; conflicts and refused input say why, change nothing."""

import pytest
from django.urls import reverse

from catalog.models import Attribute
from extraction.models import ExtractedValue
from review.actions import do_review
from review.models import GoldValue, ValueEvent
from tests.support.factories import make_scenario
from tests.support.pages import refusal

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def act(client, target, action, version=0, htmx=True, **extra):
    """POST `action` on the `target` value as its product page's form does (`extra`: the edit box)."""
    url = reverse("review:review_in_place", args=[target.pk])
    return client.post(url, {"action": action, "version": version, **extra}, **(HTMX if htmx else {}))


def review_of(value):
    return ExtractedValue.objects.select_related("review").get(pk=value.pk).review


def test_accept_correct_and_na_answer_with_the_cell_in_its_new_state(client_for, bob):
    scene = make_scenario(products=1, attributes=("Brand", "Color", "Size"))
    brand, color, size = sorted(scene.values, key=lambda v: v.attribute.position)
    client = client_for(bob)
    for value, action, extra, state, shown in (
        (brand, "accept", {}, "accepted", brand.value),
        (color, "correct", {"value": " Teal "}, "corrected", "Teal"),
        (size, "set_na", {"value": "ignored: only a correction reads the box"}, "n/a", "n/a"),
    ):
        response = act(client, value, action, **extra)
        body = response.content.decode()
        assert response.status_code == 200, body
        assert body.lstrip().startswith("<div") and f'id="product-value-{value.pk}"' in body
        assert f'data-state="{state}"' in body and f">{shown}</span>" in body
        assert 'name="version" value="1"' in body  # the next action goes at the new version
        assert review_of(value).reviewed_by == bob
    # the queue's history and gold, written by the same transition
    assert list(ValueEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "accept",
        "correct",
        "set_na",
    ]
    assert dict(GoldValue.objects.values_list("attribute_name", "value")) == {
        "Brand": brand.value,
        "Color": "Teal",
        "Size": "n/a",
    }


def test_a_stale_version_is_a_conflict_that_names_who_changed_it_and_keeps_their_value(
    client_for, bob, alice
):
    scene = make_scenario(products=1, attributes=("Brand",))
    value = scene.values[0]
    do_review(value.pk, 0, "correct", alice, text="Acme")
    response = act(client_for(bob), value, "correct", version=0, value="Zenith")
    body = response.content.decode()
    assert response.status_code == 409
    assert "alice changed this value while you were looking at it" in body
    assert 'data-state="corrected"' in body and 'value="Zenith"' in body  # bob's input kept in the box
    assert review_of(value).reviewed_value == "Acme"


def test_a_correction_the_type_refuses_says_why_and_saves_nothing(client_for, bob):
    scene = make_scenario(products=1, attributes=("Size",))
    value = scene.values[0]
    Attribute.objects.filter(pk=value.attribute_id).update(kind="number", unit="cm")
    response = act(client_for(bob), value, "correct", value="tall")
    body = response.content.decode()
    assert response.status_code == 400 and 'role="alert"' in body and "nothing was saved" in body
    assert review_of(value).status == "pending" and not ValueEvent.objects.exists()
    empty = act(client_for(bob), value, "correct", value="  ")
    assert empty.status_code == 400 and "type the correct value" in empty.content.decode()


def test_actions_the_page_does_not_offer_and_unreadable_forms_are_refused(client_for, bob):
    scene = make_scenario(products=1, attributes=("Brand",))
    value = scene.values[0]
    client = client_for(bob)
    assert refusal(act(client, value, "reject", htmx=False)) == (
        "action: 'reject' is not one of accept, correct, set_na"
    )
    assert "version: expected" in refusal(act(client, value, "accept", version="x", htmx=False))
    assert act(client, value, "accept", htmx=False).status_code == 302  # the control: the same form works
    missing = client.post(
        reverse("review:review_in_place", args=[999999]), {"action": "accept", "version": 0}
    )
    assert missing.status_code == 404
    assert review_of(value).status == "accepted" and ValueEvent.objects.count() == 1


def test_without_htmx_it_goes_back_to_the_product_page_with_the_message(client_for, bob, alice):
    scene = make_scenario(products=1, attributes=("Brand",))
    value = scene.values[0]
    client = client_for(bob)
    product_url = reverse("catalog:product", args=[value.product_id])
    done = act(client, value, "accept", htmx=False, next=product_url)
    assert done.status_code == 302 and done["Location"] == product_url
    conflict = act(client, value, "set_na", version=0, htmx=False, next="https://elsewhere.example/")
    assert conflict["Location"] == product_url  # never an open redirect: the product page instead
    shown = client.get(product_url).content.decode()
    assert "bob changed this value while you were looking at it" in shown
    assert review_of(value).status == "accepted"
