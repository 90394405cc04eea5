"""Auto-accept at a chosen precision: the estimate from this catalog's blind labels per attribute,
the threshold offered only where the interval's lower end reaches the target, the labels still
needed, the confidence range on bulk actions and exports, and the accept itself."""

import json
import math
from html import unescape

import pytest
from django.urls import reverse

from extraction.engine.calibration import wilson
from extraction.models import ExtractedValue
from review import precision
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import FilterError, QueueFilter
from review.models import BulkAction, GoldValue, ValueEvent
from review.opening import open_reviews
from tests.support.factories import make_scenario
from tests.support.gold import label_blind
from tests.support.pages import refusal

pytestmark = pytest.mark.django_db


def scene_with_confidences(confidences, attributes=("Brand",)):
    """One run, one value per attribute and confidence (product i's values at confidences[i])."""
    scene = make_scenario(
        products=len(confidences), attributes=attributes, value_of=lambda i, n: (f"{n[0].lower()}{i}", 0.5)
    )
    values = sorted(scene.values, key=lambda v: (v.product.sku, v.attribute.position))
    for value in values:
        value.confidence = confidences[int(value.product.sku[1:])]
    ExtractedValue.objects.bulk_update(values, ["confidence"])
    open_reviews(values)  # as a worker writing a value again does: the review row takes the new confidence
    return scene, values


def test_the_confidence_range_filters_and_refuses_bad_bounds():
    scene, values = scene_with_confidences([0.2, 0.5, 0.9])
    chosen = QueueFilter.from_params(
        {"run": str(scene.run.pk), "min_confidence": "0.5", "max_confidence": "0.9"}
    )
    assert set(chosen.values()) == set(values[1:])
    assert QueueFilter.from_params(chosen.as_params()) == chosen  # survives a form and a stored job
    for params, says in (
        ({"min_confidence": "high"}, "min_confidence: expected a number from 0 to 1, got 'high'"),
        ({"max_confidence": "1.5"}, "max_confidence: 1.5 is outside 0 to 1"),
        ({"min_confidence": "nan"}, "min_confidence: expected a number from 0 to 1, got 'nan'"),
        (
            {"min_confidence": "0.9", "max_confidence": "0.5"},
            "min_confidence: 0.9 is above max_confidence 0.5",
        ),
    ):
        with pytest.raises(FilterError, match=says):
            QueueFilter.from_params(params)


# float() reads these as 0.5, 1 and 0.9: no form of ours writes them, so they are refused as typos.
@pytest.mark.parametrize("raw", ["０.５", "１", "0.９"])
def test_non_ascii_digits_are_refused_in_the_confidence_bounds_and_the_target(client_for, alice, raw):
    scene, values = scene_with_confidences([0.5, 0.9])
    client = client_for(alice)
    expected = f"expected a number from 0 to 1, got {raw!r}"
    queue = client.get(reverse("review:queue"), {"run": scene.run.pk, "min_confidence": raw})
    assert refusal(queue) == f"Cannot filter the queue: min_confidence: {expected}"
    bulk = client.post(
        reverse("review:bulk"), {"run": scene.run.pk, "action": "accept", "max_confidence": raw}
    )
    assert refusal(bulk) == f"Cannot run the bulk action: max_confidence: {expected}"
    assert not BulkAction.objects.exists()
    page = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": f"9{raw}"})
    assert page.status_code == 400
    assert f"target precision: '9{raw}' is not a number" in unescape(page.content.decode())
    assert {ExtractedValue.objects.get(pk=v.pk).review.status for v in values} == {"pending"}


def test_bulk_accept_and_export_take_the_confidence_range(client_for, bob):
    scene, values = scene_with_confidences([0.2, 0.5, 0.9, 0.95])
    client = client_for(bob)
    response = client.post(
        reverse("review:bulk"), {"run": scene.run.pk, "action": "accept", "min_confidence": "0.9"}
    )
    assert response.status_code == 302
    statuses = [ExtractedValue.objects.get(pk=v.pk).review.status for v in values]
    assert statuses == ["pending", "pending", "accepted", "accepted"]
    export = client.post(
        reverse("review:export"),
        {"run": scene.run.pk, "format": "json", "shape": "long", "max_confidence": "0.92"},
    )
    assert [r["value"] for r in json.loads(export.content)] == ["b2"]  # approved, and under 0.92
    bad = client.post(
        reverse("review:bulk"), {"run": scene.run.pk, "action": "reject", "max_confidence": "x"}
    )
    assert (
        refusal(bad) == "Cannot run the bulk action: max_confidence: expected a number from 0 to 1, got 'x'"
    )
    assert not ExtractedValue.objects.filter(review__status="rejected").exists()


def test_bulk_and_single_reviews_share_one_transition(bob):
    scene, values = scene_with_confidences([0.3, 0.6])
    run_bulk_action(do_create_bulk_action(QueueFilter(run=scene.run.pk), "accept", bob).pk)
    events = ValueEvent.objects.filter(action="bulk_accept").order_by("value_id")
    single = do_review(values[0].pk, 1, "reject", bob)
    assert [(e.old_status, e.new_status, e.new_value, e.version_after) for e in events] == [
        ("pending", "accepted", "b0", 1),
        ("pending", "accepted", "b1", 1),
    ]
    assert (single.review.status, single.review.version) == ("rejected", 2)
    # Accepted in bulk, no person looked at b1: approved, never gold.
    assert not GoldValue.objects.exists()


def test_without_enough_blind_labels_nothing_is_offered_and_it_says_how_many_are_needed(bob):
    scene, values = scene_with_confidences([0.99] * 300)
    for value in values[:250]:  # 250 values accepted one by one in the queue are not blind evidence
        do_review(value.pk, 0, "accept", bob)
    label_blind(values[250:260], bob)  # 10 products labelled blind, all right
    found = precision.estimate(scene.run, 0.95)
    assert (found.labelled_products, found.run_products, found.too_few) == (10, 300, True)
    assert found.products_needed == 10
    brand = found.of("Brand")
    assert (brand.labelled, brand.right, brand.proposal) == (10, 10, None)
    # All right so far: the fewest all-right values whose Wilson lower end reaches 95% is 73.
    assert wilson(73, 73)[0] >= 0.95 > wilson(72, 72)[0]
    assert brand.needed == 73 - 10


def test_a_threshold_is_offered_only_where_the_intervals_lower_end_reaches_the_target(bob):
    # 100 products labelled blind: 80 at 0.95 all right, 20 at 0.6 half right. Brand as above,
    # Color wrong everywhere: each attribute gets its own threshold or none.
    scene, values = scene_with_confidences([0.95] * 80 + [0.6] * 20 + [0.97] * 5, ("Brand", "Color"))
    labelled = [v for v in values if int(v.product.sku[1:]) < 100]
    label_blind(
        labelled,
        bob,
        lambda i, v: v.attribute.name == "Brand" and (v.confidence > 0.9 or int(v.product.sku[1:]) % 2),
    )
    found = precision.estimate(scene.run, 0.95)
    brand, color = found.of("Brand"), found.of("Color")
    assert brand.proposal.threshold == 0.95 and brand.proposal.n == 80
    assert brand.proposal.low == pytest.approx(wilson(80, 80)[0]) and brand.proposal.low >= 0.95
    # all 100 together would be 90% right: 0.6 is not offered
    assert (color.proposal, color.needed, color.right) == (None, None, 0)
    # At 97% even 80 all-right values are too few: enough products are asked for that 80% of them
    # (the share of Brand's values at 0.95) make an all-right sample whose lower end reaches 97%.
    strict = precision.estimate(scene.run, 0.97).of("Brand")
    fewest = next(m for m in range(20, 1000) if wilson(m, m)[0] >= 0.97)
    assert strict.proposal is None and strict.needed == math.ceil(fewest / 0.8) - 100 > 0


def test_cut_values_are_not_evidence_and_never_auto_accepted(client_for, alice):
    scene, values = scene_with_confidences([0.99] * 120)
    label_blind(values[:100], alice)
    cut = values[110]
    ExtractedValue.objects.filter(pk__in=[values[0].pk, cut.pk]).update(truncated=True)
    found = precision.estimate(scene.run, 0.95).of("Brand")
    assert found.labelled == 99 and found.proposal.threshold == 0.99
    client = client_for(alice)
    client.post(
        reverse("review:start_auto_accept"), {"run": scene.run.pk, "attribute": "Brand", "target": "95"}
    )
    statuses = {v.pk: ExtractedValue.objects.get(pk=v.pk).review.status for v in values}
    assert statuses[cut.pk] == statuses[values[0].pk] == "pending"
    assert sum(s == "accepted" for s in statuses.values()) == 118
    # nor by a plain bulk accept
    run_bulk_action(do_create_bulk_action(QueueFilter(run=scene.run.pk), "accept", alice).pk)
    assert ExtractedValue.objects.get(pk=cut.pk).review.status == "pending"


def test_the_page_refuses_then_offers_and_accepting_takes_only_what_it_offered(client_for, alice):
    scene, values = scene_with_confidences([0.5] * 10 + [0.99] * 90)
    client = client_for(alice)
    page = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "95%"})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="refusal"' in body and "No threshold can be offered yet" in body
    assert 'id="products-needed">20<' in body and f"catalog={scene.catalog.pk}" in body
    assert 'class="primary auto-accept"' not in body
    refused = client.post(
        reverse("review:start_auto_accept"),
        {"run": scene.run.pk, "attribute": "Brand", "target": "95", "min_confidence": "0"},
    )
    assert refused.status_code == 400 and "no threshold reaches 95.0%" in refused.content.decode()
    assert not BulkAction.objects.exists()

    label_blind(values[10:90], alice)  # 80 products labelled blind, all right
    do_review(values[95].pk, 0, "reject", alice)  # rejected: auto-accept takes pending values only
    body = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "95"}).content.decode()
    assert 'id="refusal"' not in body
    assert 'data-offered="0.990000"' in body and '<td class="pending">89</td>' in body
    response = client.post(
        reverse("review:start_auto_accept"),
        {"run": scene.run.pk, "attribute": "Brand", "target": "95", "min_confidence": "0.1"},
    )
    assert response.status_code == 302 and "min_confidence" not in response["Location"]
    statuses = [ExtractedValue.objects.get(pk=v.pk).review.status for v in values]
    assert statuses.count("accepted") == 89 and statuses[:10] == ["pending"] * 10  # the posted 0.1 is ignored
    job = BulkAction.objects.get()
    assert job.filters["min_confidence"] == "0.99" and job.filters["attribute"] == "Brand"
    assert not GoldValue.objects.exclude(provenance="blind").exists()  # auto-accepted: never gold
    bad = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "lots"})
    assert (
        bad.status_code == 400
        and "target precision: &#x27;lots&#x27; is not a number" in bad.content.decode()
    )


def test_reviewers_see_the_page_read_only_and_only_admins_accept(client_for, bob, alice, carol):
    scene, values = scene_with_confidences([0.99] * 40)
    label_blind(values[:30], alice)  # 30 right: not enough for 98% yet
    client = client_for(bob)
    page = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "98"})
    body = page.content.decode()
    assert page.status_code == 200 and 'id="read-only"' in body
    needed = precision.estimate(scene.run, 0.98).of("Brand").needed
    assert needed > 0 and f'<strong class="needed">{needed}</strong> more blind-labelled products' in body
    assert 'class="primary auto-accept"' not in body and "/review/auto-accept/start/" not in body
    refused = client.post(reverse("review:start_auto_accept"), {"run": scene.run.pk, "min_confidence": "0"})
    assert refused.status_code == 403 and not BulkAction.objects.exists()
    assert "auto-accept-link" in client.get(reverse("review:queue")).content.decode()

    # where a threshold is offered, the reviewer sees it, and no button; the admin gets the button
    offered = {"run": scene.run.pk, "target": "85"}
    as_bob = client.get(reverse("review:auto_accept"), offered).content.decode()
    assert 'data-offered="0.990000"' in as_bob and 'class="primary auto-accept"' not in as_bob
    assert "an admin accepts" in as_bob
    as_alice = client_for(alice).get(reverse("review:auto_accept"), offered).content.decode()
    assert 'class="primary auto-accept"' in as_alice and 'id="read-only"' not in as_alice
    assert client_for(carol).get(reverse("review:auto_accept"), offered).status_code == 403
