"""An attribute's size (token budget) in words, sized from the model's training data and the
catalog's known values when left empty, and a warning where its data needs more than it has."""

import pytest
from django.urls import reverse

from catalog import budgets
from catalog.kinds import DEFAULT_TOKEN_BUDGET
from catalog.schemas import AttributeData
from tests.support.catalog import make_category
from tests.support.factories import make_catalog, make_product

HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.django_db
LONG = "Blueberry Lemon Verbena with Chamomile and a Hint of Mint"


def test_an_attribute_added_without_a_size_is_sized_from_known_values_and_training_data(client_for, alice):
    category = make_category("Tea", AttributeData("Brand"))
    make_product(make_catalog(), category, known_values={"Flavor": LONG})
    client = client_for(alice)
    client.post(
        reverse("catalog:attribute_add", args=[category.pk]),
        {"base_version": 1, "name": "Flavor", "kind": "text", "description": "taste"},
        **HTMX,
    )
    flavor = category.current_schema.attributes.get(name="Flavor")
    trained = budgets._trained(budgets._model_dir())
    # the longer of the training data's Flavor and this catalog's, not the old default of 12
    assert flavor.max_tokens == max(trained.get("Flavor", 0), budgets.tokens_of(LONG) + budgets.MARGIN) > 12
    # "Brand" is in the default model's training data: its size comes from there
    assert budgets.suggested(category, "Brand").why.startswith(
        f"{trained['Brand']} tokens fit the longest Brand"
    )
    assert budgets.suggested(category, "Never seen").tokens == DEFAULT_TOKEN_BUDGET


def test_the_editor_says_the_size_in_characters_and_warns_where_values_would_be_cut(client_for, alice):
    category = make_category("Tea", AttributeData("Flavor", max_tokens=4))
    make_product(make_catalog(), category, known_values={"Flavor": LONG})
    body = client_for(alice).get(reverse("catalog:schema", args=[category.pk])).content.decode()
    assert "<th>Longest value</th>" in body and "Budget" not in body
    # one short line: the size in characters, and what its data needs; the tokens and the reason in
    # tooltips, not a paragraph per row
    needed = budgets.suggested(category, "Flavor").tokens
    cell = body.split('class="size small nowrap"', 1)[1].split("</td>", 1)[0]
    assert cell.startswith(' title="4 tokens">~12 characters <span class="warn size-warning"')
    assert cell.endswith(f">· may cut: needs ~{needed * budgets.CHARS_PER_TOKEN} characters</span>")
    assert "<br>" not in cell and "this catalog&#x27;s longest known Flavor" in cell


def test_resize_to_suggested_grows_every_too_small_attribute_as_one_new_version(client_for, alice, bob):
    category = make_category(
        "Tea", AttributeData("Flavor", max_tokens=4), AttributeData("Brand", max_tokens=60)
    )
    make_product(make_catalog(), category, known_values={"Flavor": LONG})
    url = reverse("catalog:attributes_resize", args=[category.pk])
    editor = client_for(alice).get(reverse("catalog:schema", args=[category.pk])).content.decode()
    assert "1 attribute is smaller than its data needs" in editor and "Resize 1 to suggested size" in editor

    # a reviewer reads the schema but does not change it
    assert client_for(bob).post(url, {"base_version": 1}, **HTMX).status_code == 403
    assert category.current_schema.version == 1

    body = client_for(alice).post(url, {"base_version": 1}, **HTMX).content.decode()
    wanted = budgets.suggested(category, "Flavor").tokens
    schema = category.current_schema
    assert schema.version == 2 and schema.note == f"Resized Flavor 4 → {wanted} tokens"
    assert {a.name: a.max_tokens for a in schema.attributes.all()} == {"Flavor": wanted, "Brand": 60}
    assert "Saved as v2: Resized Flavor" in body and "Resize 1 to suggested" not in body
    assert category.schema_versions.get(version=1).attributes.get(name="Flavor").max_tokens == 4  # kept

    # nothing left to resize, or an editor showing an older version: said, nothing written
    again = client_for(alice).post(url, {"base_version": 2}, **HTMX).content.decode()
    assert "nothing changed" in again
    stale = client_for(alice).post(url, {"base_version": 1}, **HTMX).content.decode()
    assert "the schema changed while you were editing" in stale
    assert category.current_schema.version == 2


def test_an_enumeration_is_sized_by_its_allowed_values_and_a_boolean_by_yes_or_no(client_for, alice):
    """Long values the training data held under the same name do not widen a slot whose values the
    type bounds; the editor does not warn where the allowed values fit."""
    form = AttributeData("Item form", kind="enum", allowed_values=["Stick", "Lotion"], max_tokens=4)
    category = make_category("Sunscreen", form, AttributeData("Waterproof", kind="boolean", max_tokens=4))
    assert budgets._trained(budgets._model_dir())["Item form"] > 4  # what the name alone would ask
    sized = budgets.suggested_for(category, form)
    needed = max(budgets.tokens_of(v) for v in ("Stick", "Lotion"))
    assert sized.tokens == max(needed + budgets.MARGIN, budgets.LOW) <= 4
    assert sized.why.startswith("its longest allowed value, ") and sized.why.endswith(f"needs {needed}")
    assert budgets.suggested_for(category, AttributeData("Waterproof", kind="boolean")).tokens == budgets.LOW
    body = client_for(alice).get(reverse("catalog:schema", args=[category.pk])).content.decode()
    assert "may cut" not in body and 'id="resize-attributes"' not in body
