"""Typed values in the review queue: an enumeration or a boolean is corrected from a list of its
values, a number beside its unit and stored in it; what the type cannot hold is refused."""

import re

import pytest
from django.urls import reverse

from catalog.models import Attribute, Product
from review.models import GoldValue, ValueEvent
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db

VALUES = {"Brand": "Acme", "Gender": "Men", "Waterproof": "yes", "Screen size": "55 in"}
TYPES = {
    "Gender": {"kind": "enum", "allowed_values": ["Men", "Women", "Unisex"]},
    "Waterproof": {"kind": "boolean"},
    "Screen size": {"kind": "number", "unit": "in"},
}


@pytest.fixture
def scene():
    scene = make_scenario(products=1, attributes=tuple(VALUES), value_of=lambda i, name: (VALUES[name], 0.5))
    for name, fields in TYPES.items():
        Attribute.objects.filter(pk=scene.attributes[name].pk).update(**fields)
    scene.by_name = {v.attribute.name: v for v in scene.values}
    return scene


def row_html(client, value) -> str:
    return client.get(reverse("review:row", args=[value.pk])).content.decode()


def correct(client, value, text):
    return client.post(
        reverse("review:review_value", args=[value.pk]),
        {"action": "correct", "version": value.review.version, "value": text},
        HTTP_HX_REQUEST="true",
    )


def options(html: str) -> list[str]:
    select = re.search(r'<select name="value".*?</select>', html, re.S).group(0)
    return re.findall(r"<option[^>]*>([^<]*)</option>", select)


def test_an_enumeration_is_edited_with_a_list_of_its_values_and_n_a(client_for, bob, scene):
    html = row_html(client_for(bob), scene.by_name["Gender"])
    assert options(html) == ["Men", "Women", "Unisex", "n/a"]
    assert "<option selected>Men</option>" in html  # the current value is picked
    assert 'aria-label="Correct value of Gender"' in html
    assert '<input type="text" name="value"' not in html


def test_a_boolean_is_edited_with_yes_no_and_n_a(client_for, bob, scene):
    assert options(row_html(client_for(bob), scene.by_name["Waterproof"])) == ["yes", "no", "n/a"]


def test_a_number_is_edited_beside_its_unit(client_for, bob, scene):
    html = row_html(client_for(bob), scene.by_name["Screen size"])
    assert 'name="value" value="55"' in html  # the number; its unit is shown beside it
    assert '<span class="unit"' in html and ">in</span>" in html
    assert "<select" not in html


def test_a_correction_outside_the_allowed_values_is_refused_and_nothing_is_stored(client_for, bob, scene):
    value = scene.by_name["Gender"]
    response = correct(client_for(bob), value, "Purple")
    assert response.status_code == 400
    assert "&#x27;Purple&#x27; is not one of Men, Women, Unisex (or n/a); nothing was saved" in (
        response.content.decode()
    )
    value.refresh_from_db()
    assert (value.review.status, value.review.reviewed_value, value.review.version) == ("pending", "", 0)
    assert not ValueEvent.objects.exists() and not GoldValue.objects.exists()


@pytest.mark.parametrize(
    ("name", "typed", "stored"),
    [
        ("Gender", "women", "Women"),  # the allowed value's spelling
        ("Gender", "N/A", "n/a"),
        ("Waterproof", "false", "no"),
        ("Screen size", "56", "56 in"),  # a bare number is read in the schema's unit
        ("Screen size", "140 cm", "55.118 in"),  # another unit is converted
        ("Brand", "  Acme   Corp ", "Acme Corp"),
    ],
)
def test_a_correction_is_stored_normalized(client_for, bob, scene, name, typed, stored):
    value = scene.by_name[name]
    assert correct(client_for(bob), value, typed).status_code == 200
    value.refresh_from_db()
    assert (value.review.status, value.review.reviewed_value) == ("corrected", stored)
    assert GoldValue.objects.get(source=value).value == stored


@pytest.mark.parametrize(
    ("name", "typed", "reason"),
    [
        ("Waterproof", "maybe", "&#x27;maybe&#x27; is not yes or no (or n/a)"),
        ("Screen size", "5 kg", "&#x27;5 kg&#x27; is not a number in in (or in a unit that converts to it)"),
        ("Screen size", "big", "&#x27;big&#x27; is not a number in in"),
    ],
)
def test_a_value_its_type_cannot_hold_is_refused(client_for, bob, scene, name, typed, reason):
    value = scene.by_name[name]
    response = correct(client_for(bob), value, typed)
    assert response.status_code == 400 and reason in response.content.decode()
    value.refresh_from_db()
    assert value.review.status == "pending"


def test_only_a_copied_value_is_flagged_when_the_text_does_not_hold_it(client_for, bob, scene):
    client = client_for(bob)
    Product.objects.filter(pk=scene.products[0].pk).update(title="Item 0")  # holds no value
    assert "not in text</span>" in row_html(client, scene.by_name["Brand"])
    assert "not in text</span>" not in row_html(client, scene.by_name["Waterproof"])  # written, not copied
    Attribute.objects.filter(pk=scene.attributes["Brand"].pk).update(free=True)
    assert "not in text</span>" not in row_html(client, scene.by_name["Brand"])
