"""Single-value review actions: accept, correct, reject, n/a, undo, history, gold, conflicts."""

import json
import re

import pytest
from django.urls import reverse

from extraction.models import ExtractedValue
from review.actions import ReviewConflict, do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import QueueFilter
from review.models import BulkAction, GoldValue, ValueEvent
from tests.support.factories import make_scenario
from tests.support.gold import seed_gold_from_known_values
from tests.support.pages import refusal

pytestmark = pytest.mark.django_db


@pytest.fixture
def scene():
    return make_scenario(products=3)


def post_action(client, value, action, text=None, version=None, htmx=True):
    data = {"action": action, "version": value.review.version if version is None else version}
    if text is not None:
        data["value"] = text
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(reverse("review:review_value", args=[value.pk]), data, **headers)


def test_it_accepts_a_value_and_makes_it_gold(client_for, bob, scene):
    value = scene.values[0]
    response = post_action(client_for(bob), value, "accept")
    assert response.status_code == 200
    value.refresh_from_db()
    assert (
        value.review.status,
        value.review.reviewed_value,
        value.review.reviewed_by,
        value.review.version,
    ) == (
        "accepted",
        value.value,
        bob,
        1,
    )
    gold = GoldValue.objects.get(
        product=value.product, attribute_name=value.attribute.name, schema=scene.schema
    )
    assert gold.value == value.value and gold.source == value
    assert 'data-outcome="ok"' in response.content.decode()


def test_it_corrects_a_value_and_keeps_the_model_value(client_for, bob, scene):
    value = scene.values[1]
    post_action(client_for(bob), value, "correct", text="  Nike  ")
    value.refresh_from_db()
    assert (value.review.status, value.review.reviewed_value, value.value) == ("corrected", "Nike", "color0")
    assert GoldValue.objects.get(source=value).value == "Nike"
    event = ValueEvent.objects.get(value=value)
    assert (event.actor, event.action, event.old_value, event.new_value, event.run) == (
        bob,
        "correct",
        "color0",
        "Nike",
        scene.run,
    )


def test_it_rejects_a_value_and_takes_its_gold_back(client_for, alice, scene):
    value = scene.values[0]
    client = client_for(alice)
    post_action(client, value, "accept")
    value.refresh_from_db()
    post_action(client, value, "reject")
    value.refresh_from_db()
    assert value.review.status == "rejected"
    assert not GoldValue.objects.filter(product=value.product).exists()


def test_it_sets_na(client_for, bob, scene):
    value = scene.values[2]
    post_action(client_for(bob), value, "set_na")
    value.refresh_from_db()
    assert (value.review.status, value.review.reviewed_value) == ("corrected", "n/a")
    assert GoldValue.objects.get(source=value).value == "n/a"


def test_it_refuses_an_empty_correction_and_changes_nothing(client_for, bob, scene):
    value = scene.values[0]
    response = post_action(client_for(bob), value, "correct", text="   ")
    assert response.status_code == 400
    assert "type the correct value" in response.content.decode()
    value.refresh_from_db()
    assert (value.review.status, value.review.version) == ("pending", 0)
    assert not ValueEvent.objects.exists()


def test_it_refuses_an_unknown_action(client_for, bob, scene):
    response = post_action(client_for(bob), scene.values[0], "delete")
    assert refusal(response) == "action: 'delete' is not one of accept, correct, reject, set_na"


def test_it_undoes_the_last_change_and_then_the_one_before(client_for, bob, scene):
    client = client_for(bob)
    first, second = scene.values[0], scene.values[1]
    post_action(client, first, "accept")
    post_action(client, second, "correct", text="Blue")
    on_page = {"on_page": f"{first.pk},{second.pk}"}
    response = client.post(reverse("review:undo"), on_page, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Retarget"] == f"#value-{second.pk}"
    said = json.loads(response["HX-Trigger"])["review-message"]["text"]
    assert said == (
        f"Undone your correction of {second.attribute.name} of {second.product.sku} (run #{second.run_id}): "
        f"it is {second.value!r} (pending) again."
    )
    second.refresh_from_db()
    assert (second.review.status, second.review.reviewed_value) == ("pending", "")
    assert not GoldValue.objects.filter(source=second).exists()
    client.post(reverse("review:undo"), on_page, HTTP_HX_REQUEST="true")
    first.refresh_from_db()
    assert first.review.status == "pending"
    assert list(first.events.values_list("action", "undone")) == [("undo", False), ("accept", True)]
    response = client.post(reverse("review:undo"), HTTP_HX_REQUEST="true")
    assert "nothing to undo" in response["HX-Trigger"]


@pytest.mark.parametrize("on_page", ["²", "①", "１", "12,²"])
def test_an_undo_with_a_page_list_not_in_ascii_digits_is_refused_and_undoes_nothing(
    client_for, bob, scene, on_page
):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", bob)
    response = client_for(bob).post(reverse("review:undo"), {"on_page": on_page}, HTTP_HX_REQUEST="true")
    assert refusal(response) == (
        f"Cannot undo: on_page: expected the ids of rows (1 or more) separated by commas, got {on_page!r}; "
        "nothing was undone"
    )
    value.refresh_from_db()
    assert (value.review.status, value.review.version) == ("accepted", 1)
    assert list(value.events.values_list("action", "undone")) == [("accept", False)]


def test_undo_walks_back_through_its_own_undos_without_calling_them_someone_elses(client_for, bob, scene):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", bob)
    do_review(value.pk, 1, "correct", bob, text="Puma")
    client = client_for(bob)
    client.post(reverse("review:undo"), {"on_page": str(value.pk)}, HTTP_HX_REQUEST="true")
    response = client.post(reverse("review:undo"), {"on_page": str(value.pk)}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "while you were looking" not in response["HX-Trigger"]
    value.refresh_from_db()
    assert value.review.status == "pending"


def test_an_undo_of_a_value_off_this_page_says_so(client_for, bob, scene):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", bob)
    response = client_for(bob).post(
        reverse("review:undo"), {"on_page": str(scene.values[1].pk)}, HTTP_HX_REQUEST="true"
    )
    said = json.loads(response["HX-Trigger"])["review-message"]["text"]
    assert response["HX-Reswap"] == "none" and "HX-Retarget" not in response
    assert said.startswith(f"Undone your acceptance of {value.attribute.name} of {value.product.sku}")
    assert said.endswith("It is not on this page.")


def test_undo_after_a_bulk_accept_takes_back_the_bulk_accept_not_an_older_change(
    client_for, bob, alice, scene
):
    older = scene.values[0]
    do_review(older.pk, 0, "correct", bob, text="Older")  # bob's older change, on another page
    run_bulk_action(do_create_bulk_action(QueueFilter(run=scene.run.pk), "accept", bob).pk)
    accepted = [v for v in scene.values if v.pk != older.pk]
    changed = accepted[0]
    do_review(changed.pk, 1, "reject", alice)  # someone changed one of them since
    client = client_for(bob)
    response = client.post(reverse("review:undo"), {"on_page": str(older.pk)}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    statuses = dict(scene.run.values.values_list("pk", "review__status"))
    assert statuses.pop(older.pk) == "corrected" and statuses.pop(changed.pk) == "rejected"
    assert set(statuses.values()) == {"pending"}
    page = client.get(reverse("review:queue"), {"run": scene.run.pk}).content.decode()
    job = BulkAction.objects.get()
    assert (
        f"Undone your bulk accept #{job.pk}: {len(accepted) - 1} values back as they were. "
        "1 changed by someone since were left as they are."
    ) in page
    # the next undo reaches bob's older correction, and says which value it was
    response = client.post(reverse("review:undo"), {"on_page": ""}, HTTP_HX_REQUEST="true")
    assert f"of {older.attribute.name} of {older.product.sku}" in response["HX-Trigger"]
    older.refresh_from_db()
    assert older.review.status == "pending"


def test_it_refuses_to_undo_over_someone_elses_later_change(client_for, bob, alice, scene):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", bob)
    do_review(value.pk, 1, "correct", alice, text="Puma")
    response = client_for(bob).post(reverse("review:undo"), HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "Cannot undo" in response["HX-Trigger"]
    value.refresh_from_db()
    assert value.review.reviewed_value == "Puma"


def test_the_second_of_two_concurrent_edits_gets_a_conflict_with_the_current_value(
    client_for, bob, alice, scene
):
    value = scene.values[0]
    seen = value.review.version
    post_action(client_for(alice), value, "correct", text="Adidas", version=seen)
    response = post_action(client_for(bob), value, "correct", text="Reebok", version=seen)
    assert response.status_code == 409
    body = response.content.decode()
    assert "alice changed this value" in body and "Adidas" in body  # the current value, and who
    assert 'value="Reebok"' in body  # bob's input is kept in the edit box: nothing lost
    assert 'data-outcome="conflict"' in body
    value.refresh_from_db()
    assert (value.review.reviewed_value, value.review.reviewed_by, value.review.version) == (
        "Adidas",
        alice,
        1,
    )
    assert ValueEvent.objects.filter(value=value).count() == 1


def test_the_conflict_is_raised_by_the_service_too(bob, alice, scene):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", alice)
    with pytest.raises(ReviewConflict) as caught:
        do_review(value.pk, 0, "reject", bob)
    assert caught.value.current.review.status == "accepted"
    assert ExtractedValue.objects.get(pk=value.pk).review.status == "accepted"


def test_history_shows_who_when_old_new_and_run(client_for, bob, alice, scene):
    value = scene.values[0]
    do_review(value.pk, 0, "accept", bob)
    do_review(value.pk, 1, "correct", alice, text="Asics")
    page = client_for(bob).get(reverse("review:history", args=[value.pk])).content.decode()
    body = page[page.index('id="history"') : page.index("</table>")]
    rows = [
        [
            " ".join(re.sub(r"<[^>]+>", " ", cell).split())
            for cell in re.findall(r"<td>(.*?)</td>", row, re.S)[1:]
        ]
        for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
        if "<td>" in row  # not the header
    ]
    run = f"#{scene.run.pk} HPD (hyper-parallel)"
    assert rows == [  # newest first: who, action, old and new value with their status, run
        ["alice", "Corrected", "brand0 accepted", "Asics corrected", run],
        ["bob", "Accepted", "brand0 pending", "brand0 accepted", run],
    ]


def test_without_htmx_an_action_redirects_back_to_the_queue(client_for, bob, scene):
    response = post_action(client_for(bob), scene.values[0], "accept", htmx=False)
    assert response.status_code == 302
    assert response["Location"] == reverse("review:queue")


def test_taking_back_an_approval_restores_the_catalogs_known_value_as_gold(client_for, bob, scene):
    value = scene.values[0]  # Brand of product 0
    type(value.product).objects.filter(pk=value.product.pk).update(known_values={"Brand": "Known Brand"})
    seed_gold_from_known_values(type(value.product).objects.filter(pk=value.product.pk))
    do_review(value.pk, 0, "correct", bob, text="Reviewed Brand")
    assert GoldValue.objects.get(product=value.product, attribute_name="Brand").value == "Reviewed Brand"
    client_for(bob).post(reverse("review:undo"), HTTP_HX_REQUEST="true")
    gold = GoldValue.objects.get(product=value.product, attribute_name="Brand")
    assert (gold.value, gold.source) == ("Known Brand", None)
