"""A product's page: each value's review state, the run that wrote it (a picker where two runs did),
and accept / correct / n/a in place for the roles that review; raters and anonymous users refused."""

import re

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from catalog.views.products import REVIEW_ROLES
from extraction.models import Run
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import QueueFilter
from review.views.product_values import product_value, review_in_place
from tests.support.factories import make_run, make_scenario, make_values

pytestmark = pytest.mark.django_db
ATTRIBUTES = ("Brand", "Color", "Size", "Fit", "Sole", "Lace", "Heel")


def states(body: str) -> dict[int, str]:
    """{value id: the state the page shows}, from each value's cell."""
    return {
        int(pk): state for pk, state in re.findall(r'id="product-value-(\d+)"[^>]*data-state="([^"]*)"', body)
    }


def page(client, product, **params):
    return client.get(reverse("catalog:product", args=[product.pk]), params)


@pytest.fixture
def one_product_every_state(bob):
    """One product read by one run, its seven values in the seven states a reader can meet."""
    scene = make_scenario(products=1, attributes=ATTRIBUTES)
    value = {v.attribute.name: v for v in scene.values}
    do_review(value["Brand"].pk, 0, "accept", bob)
    do_review(value["Color"].pk, 0, "correct", bob, text="Teal")
    do_review(value["Size"].pk, 0, "set_na", bob)
    do_review(value["Heel"].pk, 0, "reject", bob)
    run_bulk_action(do_create_bulk_action(QueueFilter(run=scene.run.pk, attribute="Fit"), "accept", bob).pk)
    # auto-accept: a bulk accept of pending values above a confidence threshold
    auto = QueueFilter(run=scene.run.pk, attribute="Sole", status="pending", min_confidence=0.0)
    run_bulk_action(do_create_bulk_action(auto, "accept", bob).pk)
    return scene, value


def test_it_shows_each_values_review_state(client_for, bob, one_product_every_state):
    scene, value = one_product_every_state
    body = page(client_for(bob), scene.products[0]).content.decode()
    shown = states(body)
    assert {name: shown[v.pk] for name, v in value.items()} == {
        "Brand": "accepted",
        "Color": "corrected",
        "Size": "n/a",
        "Fit": "accepted in bulk",
        "Sole": "auto-accepted",
        "Lace": "pending",
        "Heel": "rejected",
    }
    assert '<span class="shown">Teal</span>' in body  # the reviewer's value, the model's struck out
    assert f'<s class="model-value" title="What the model said">{value["Color"].value}</s>' in body
    assert f'href="/runs/{scene.run.pk}/" class="run-link">run #{scene.run.pk}</a>' in body


def test_an_undone_bulk_accept_is_pending_again_and_a_later_accept_by_hand_is_accepted(
    client_for, bob, one_product_every_state
):
    from review.actions import do_undo

    scene, value = one_product_every_state
    do_undo(bob)  # the Sole auto-accept
    do_review(value["Fit"].pk, 1, "accept", bob)  # a person confirms the bulk-accepted Fit
    shown = states(page(client_for(bob), scene.products[0]).content.decode())
    assert (shown[value["Sole"].pk], shown[value["Fit"].pk]) == ("pending", "accepted")


def test_two_runs_get_a_picker_showing_the_newest_first_and_the_run_asked_for(client_for, bob):
    scene = make_scenario(products=2, attributes=("Brand",))
    product = scene.products[0]
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    (ar_value,) = make_values(ar, {(product, scene.attributes["Brand"]): ("ar brand", 0.7)})
    (hpd_value,) = [v for v in scene.values if v.product == product]
    client = client_for(bob)
    newest = page(client, product).content.decode()
    assert 'id="run-picker"' in newest and set(states(newest)) == {ar_value.pk}
    assert f'<option value="{ar.pk}" selected>run #{ar.pk}' in newest
    assert set(states(page(client, product, run=scene.run.pk).content.decode())) == {hpd_value.pk}
    assert set(states(page(client, product, run="all").content.decode())) == {hpd_value.pk, ar_value.pk}
    # a product only one run read: no picker, the run named
    single = page(client, scene.products[1]).content.decode()
    assert 'id="run-picker"' not in single and f"Values of run #{scene.run.pk}" in single

    for bad, said in (("x", "run: expected a number"), (str(ar.pk + 1000), "wrote no value of this product")):
        refused = page(client, product, run=bad)
        assert refused.status_code == 400 and said in refused.content.decode(), bad


def test_the_page_reads_states_in_the_same_queries_however_many_values(client_for, bob):
    small = make_scenario(products=1, attributes=("Brand",))
    large = make_scenario(products=1, attributes=ATTRIBUTES)
    for v in large.values:
        do_review(v.pk, 0, "accept", bob)  # each value with a history to read
    client = client_for(bob)

    def queries(product) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert page(client, product).status_code == 200
        return len(captured)

    assert queries(large.products[0]) == queries(small.products[0])


def test_reviewers_and_admins_get_the_buttons(client_for, alice, bob):
    scene = make_scenario(products=1, attributes=("Brand",))
    for user in (alice, bob):
        body = page(client_for(user), scene.products[0]).content.decode()
        url = reverse("review:review_in_place", args=[scene.values[0].pk])
        assert body.count(f'hx-post="{url}"') == 2, user  # accept / n/a, and the correction's own form


def test_a_value_shown_to_someone_who_may_not_review_has_its_state_and_no_buttons(bob):
    scene = make_scenario(products=1, attributes=("Brand",))
    do_review(scene.values[0].pk, 0, "accept", bob)
    cell = render_to_string(
        "review/_product_value.html", {"value": product_value(scene.values[0].pk), "can_review": False}
    )
    assert 'data-state="accepted"' in cell and "<form" not in cell and "<button" not in cell


def test_the_page_offers_the_buttons_to_exactly_the_roles_the_action_lets_in():
    assert review_in_place.allowed_roles == REVIEW_ROLES


def test_raters_are_refused_the_page_and_the_action_and_change_nothing(client_for, carol):
    scene = make_scenario(products=1, attributes=("Brand",))
    client = client_for(carol)
    assert page(client, scene.products[0]).status_code == 403
    url = reverse("review:review_in_place", args=[scene.values[0].pk])
    assert client.post(url, {"action": "accept", "version": 0}).status_code == 403
    assert scene.run.values.get().review.status == "pending"


def test_anonymous_users_are_sent_to_sign_in_and_change_nothing(client):
    scene = make_scenario(products=1, attributes=("Brand",))
    url = reverse("review:review_in_place", args=[scene.values[0].pk])
    for response in (page(client, scene.products[0]), client.post(url, {"action": "accept", "version": 0})):
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert scene.run.values.get().review.status == "pending"
