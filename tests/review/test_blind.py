"""Blind labelling: the product's text and an empty field per attribute, never a model's output."""

import pytest
from django.urls import reverse

from catalog.models import Attribute
from review.actions import do_review
from review.blind import draw
from review.models import GoldValue
from tests.support.factories import (
    make_catalog,
    make_product,
    make_run,
    make_scenario,
    make_schema,
    make_values,
)

pytestmark = pytest.mark.django_db


def guessing_scenario(products=3):
    """Model values and confidences that appear nowhere in the products' text."""
    scene = make_scenario(
        products=products, value_of=lambda i, name: (f"modelguess{name}{i}", 0.8731 + i / 10000)
    )
    for i, product in enumerate(scene.products):
        product.title, product.description = f"Plain product {i}", "A description of it."
        product.save()
    return scene


def in_sample_order(products):
    """Products in the order the blind pages serve them: the seeded sample's."""
    return sorted(products, key=lambda p: draw(p.pk))


def label_url(scene, **params):
    return (
        reverse("review:blind_label")
        + "?"
        + "&".join(f"{k}={v}" for k, v in {"catalog": scene.catalog.pk, **params}.items())
    )


def save(client, scene, product, labels, **extra):
    fields = {f"attr-{scene.attributes[name].pk}": text for name, text in labels.items()}
    return client.post(
        reverse("review:blind_save", args=[product.pk]),
        {"catalog": scene.catalog.pk, "schema": scene.schema.pk, **fields, **extra},
    )


def test_the_page_shows_the_product_text_and_no_value_of_any_run(client_for, bob):
    scene = guessing_scenario()
    other = make_run(scene.products, scene.schema)  # a second run, with values of its own
    make_values(
        other, {(p, a): ("secondrunvalue", 0.6642) for p in scene.products for a in scene.attributes.values()}
    )
    client = client_for(bob)
    start = client.get(reverse("review:blind_start")).content.decode()
    assert f'<option value="{scene.catalog.pk}">{scene.catalog.name}</option>' in start
    body = client.get(label_url(scene)).content.decode()
    first = in_sample_order(scene.products)[0]
    assert first.title in body and first.sku in body
    assert body.count('class="blind-input"') == 2 and 'value=""' in body
    shown = [v.value for v in scene.run.values.all()] + ["secondrunvalue"]
    confidences = [f"{v.confidence}" for v in scene.run.values.all()] + ["0.6642", "0.87", "87%"]
    assert [text for text in shown + confidences if text in body] == []
    assert "0 of 3 products labelled blind" in body


def test_saving_labels_makes_blind_gold_and_serves_the_next_product_in_order(client_for, bob):
    scene = guessing_scenario()
    client = client_for(bob)
    first, second, third = in_sample_order(scene.products)
    response = save(client, scene, first, {"Brand": "  Acme ", "Color": "N/A"})
    assert response.status_code == 302 and f"after={first.pk}" in response["Location"]
    assert set(
        GoldValue.objects.values_list("product", "attribute_name", "value", "provenance", "approved_by")
    ) == {
        (first.pk, "Brand", "Acme", "blind", bob.pk),
        (first.pk, "Color", "n/a", "blind", bob.pk),
    }
    body = client.get(response["Location"]).content.decode()
    assert f'data-product="{second.pk}"' in body and "1 of 3 products labelled blind" in body
    # Skipping the second product serves the third; once that is labelled, the skipped one comes back.
    body = client.get(label_url(scene, after=second.pk)).content.decode()
    assert f'data-product="{third.pk}"' in body
    response = save(client, scene, third, {"Brand": "b", "Color": "c"})
    assert f'data-product="{second.pk}"' in client.get(response["Location"]).content.decode()
    save(client, scene, second, {"Brand": "b", "Color": "c"})
    done = client.get(label_url(scene)).content.decode()
    assert 'id="blind-done"' in done and "3 of 3 products labelled blind" in done


def test_blind_labels_are_their_own_pool_a_seeded_sample_whatever_other_gold_there_is(client_for, bob):
    scene = guessing_scenario(products=12)
    ordered = in_sample_order(scene.products)
    # Gold of other kinds (a value accepted by hand, a catalog value) does not take a product out.
    do_review(scene.run.values.get(product=ordered[0], attribute__name="Brand").pk, 0, "accept", bob)
    GoldValue.objects.create(
        product=ordered[1], attribute_name="Color", schema=scene.schema, value="Red", provenance="catalog"
    )
    client = client_for(bob)
    body = client.get(label_url(scene)).content.decode()
    assert f'data-product="{ordered[0].pk}"' in body and "0 of 12 products labelled blind" in body
    served = []
    after = None
    for _ in range(12):  # walking the pool serves every product once, in the sample's order
        body = client.get(label_url(scene, **({"after": after} if after else {}))).content.decode()
        product = next(p for p in scene.products if f'data-product="{p.pk}"' in body)
        served.append(product)
        save(client, scene, product, {"Brand": "b", "Color": "c"})
        after = product.pk
    assert served == ordered
    assert draw(ordered[0].pk) < draw(ordered[1].pk)  # md5 here is PostgreSQL's md5
    assert "12 of 12 products labelled blind" in client.get(label_url(scene)).content.decode()


def test_a_category_narrows_the_selection(client_for, bob):
    scene = guessing_scenario(products=2)
    mugs = make_schema("Mugs", ("Shape",))
    mug = make_product(scene.catalog, mugs.category, title="Round mug")
    body = client_for(bob).get(label_url(scene, category=mugs.category.pk)).content.decode()
    assert f'data-product="{mug.pk}"' in body and "0 of 1 product labelled blind" in body and "Shape" in body


def test_bad_labels_are_refused_with_what_and_where_and_store_nothing(client_for, bob):
    scene = guessing_scenario()
    Attribute.objects.filter(pk=scene.attributes["Color"].pk).update(
        kind="enum", allowed_values=["Red", "Blue"]
    )
    client = client_for(bob)
    product = scene.products[0]
    response = save(client, scene, product, {"Brand": "", "Color": "green"})
    body = response.content.decode()
    assert response.status_code == 400
    assert (
        "empty: type the value, or n/a" in body
        and "&#x27;green&#x27; is not one of Red, Blue (or n/a)" in body
    )
    assert 'value="green"' in body  # what was typed stays in the field
    assert GoldValue.objects.count() == 0
    assert save(client, scene, product, {"Brand": "x" * 501, "Color": "red"}).status_code == 400
    assert GoldValue.objects.count() == 0
    # A schema changed since the page was shown: the fields no longer match, nothing is stored.
    make_schema(scene.schema.category, ("Brand", "Color", "Size"))
    response = save(client, scene, product, {"Brand": "a", "Color": "red"})
    assert response.status_code == 400 and "schema changed" in response.content.decode()
    assert GoldValue.objects.count() == 0
    # The enumeration takes the allowed spelling once the schema is the current one.
    scene.schema = scene.schema.category.current_schema
    scene.attributes = {a.name: a for a in scene.schema.attributes.all()}
    assert save(client, scene, product, {"Brand": "a", "Color": "n/a", "Size": "n/a"}).status_code == 302


def test_a_bad_selection_is_a_clear_400(client_for, bob):
    client = client_for(bob)
    for params, message in (
        ({}, "catalog: choose the catalog"),
        ({"catalog": "x"}, "catalog: expected a number"),
        ({"catalog": "99999"}, "there is no catalog #99999"),
        ({"catalog": make_catalog().pk, "category": "99999"}, "there is no category #99999"),
        ({"catalog": make_catalog().pk, "after": "-1"}, "after: expected a number"),
    ):
        response = client.get(reverse("review:blind_label"), params)
        assert response.status_code == 400 and message in response.content.decode(), params


def test_someone_elses_blind_labels_are_not_overwritten(client_for, bob, alice):
    scene = guessing_scenario(products=1)
    save(client_for(alice), scene, scene.products[0], {"Brand": "alice", "Color": "n/a"})
    response = save(client_for(bob), scene, scene.products[0], {"Brand": "bob", "Color": "n/a"})
    assert response.status_code == 302
    assert GoldValue.objects.get(attribute_name="Brand").value == "alice"


def test_reviewers_and_admins_label_and_raters_may_not(client_for, alice, bob, carol):
    scene = guessing_scenario(products=1)
    for user, status in ((alice, 200), (bob, 200), (carol, 403)):
        client = client_for(user)
        assert client.get(reverse("review:blind_start")).status_code == status
        assert client.get(label_url(scene)).status_code == status
    response = save(client_for(carol), scene, scene.products[0], {"Brand": "a", "Color": "b"})
    assert response.status_code == 403 and GoldValue.objects.count() == 0
    nav = client_for(bob).get(reverse("review:queue")).content.decode()
    assert reverse("review:blind_start") in nav  # reachable from the review area
