"""An attribute's size (token budget) in words, sized from the model's training data and the
catalog's known values when left empty, and a warning where its data needs more than it has."""

import pytest
from django.urls import reverse

from catalog import budgets
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
    assert budgets.suggested(category, "Never seen").tokens == budgets.DEFAULT_TOKENS


def test_the_editor_says_the_size_in_characters_and_warns_where_values_would_be_cut(client_for, alice):
    category = make_category("Tea", AttributeData("Flavor", max_tokens=4))
    make_product(make_catalog(), category, known_values={"Flavor": LONG})
    body = client_for(alice).get(reverse("catalog:schema", args=[category.pk])).content.decode()
    assert "<th>Longest value</th>" in body and "Budget" not in body
    assert "Up to about 12 characters (4 tokens)" in body
    assert "Values may be cut: its data needs" in body and "this catalog&#x27;s longest known Flavor" in body
