"""Auto-accept at a chosen precision: the estimate (reviewed values or dev figures), the proposal,
the confidence range on bulk actions and exports, and the accept itself."""

import json

import pytest
from django.urls import reverse

from extraction import config
from extraction.models import ExtractedValue
from review import precision
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import FilterError, QueueFilter
from review.models import BulkAction, GoldValue, ValueEvent
from review.opening import open_reviews
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db
CURVE = [[0.0, 0.9, 1000, 0.88, 0.92], [0.8, 0.97, 600, 0.955, 0.98], [0.9, 0.985, 400, 0.97, 0.993]]


def model_dir_with(tmp_path, calibration) -> str:
    """A model directory whose slotwise.json holds `calibration` (None: no such key)."""
    stored = {"label": "test model", "extractive": True}
    if calibration is not None:
        stored["calibration"] = calibration
    (tmp_path / "slotwise.json").write_text(json.dumps(stored))
    return str(tmp_path)


FIT = "run `python -m extraction evaluate --fit-calibration` on this model to measure it"


def too_few(judged: int) -> str:
    return f"only {judged} values of this model are judged (the estimate uses them from 200 on)"


def scene_with_confidences(confidences, model_dir="models/test"):
    """One run, one Brand value per confidence (in that order)."""
    scene = make_scenario(
        products=len(confidences), attributes=("Brand",), value_of=lambda i, n: (f"b{i}", 0.5)
    )
    values = sorted(scene.values, key=lambda v: v.product.sku)
    for value, confidence in zip(values, confidences, strict=True):
        value.confidence = confidence
    ExtractedValue.objects.bulk_update(values, ["confidence"])
    open_reviews(values)  # as a worker writing a value again does: the review row takes the new confidence
    scene.run.model_dir = model_dir
    scene.run.save(update_fields=["model_dir"])
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
        ({"min_confidence": "nan"}, "min_confidence: nan is outside 0 to 1"),
        (
            {"min_confidence": "0.9", "max_confidence": "0.5"},
            "min_confidence: 0.9 is above max_confidence 0.5",
        ),
    ):
        with pytest.raises(FilterError, match=says):
            QueueFilter.from_params(params)


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
    assert bad.status_code == 400
    assert bad.content.decode() == (
        "<p class='error'>Cannot run the bulk action: max_confidence: expected a number from 0 to 1, "
        "got &#x27;x&#x27;</p>"
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
    assert list(GoldValue.objects.values_list("value", flat=True)) == ["b1"]  # the reject took b0's back


def judge(values, right: int, bob):
    """Review `values` by hand: the first `right` accepted, the rest corrected."""
    for i, value in enumerate(values):
        if i < right:
            do_review(value.pk, 0, "accept", bob)
        else:
            do_review(value.pk, 0, "correct", bob, text="fixed")


def test_with_200_judged_values_the_estimate_comes_from_them(bob, tmp_path):
    # 100 values at 0.95 (99 right), 100 at 0.55 (60 right), 50 pending at 0.96 and 0.6.
    confidences = [0.95] * 100 + [0.55] * 100 + [0.96] * 25 + [0.6] * 25
    scene, values = scene_with_confidences(
        confidences, model_dir_with(tmp_path, {"precision_curve": {"hpd": CURVE}})
    )
    judge(values[:100], 99, bob)
    judge(values[100:200], 60, bob)
    found = precision.estimate(scene.run, 0.98)
    assert (found.source, found.judged) == ("reviewed", 200)
    p = found.proposal
    assert (p.threshold, p.n, p.precision) == (0.95, 100, 0.99)
    assert p.low == pytest.approx(0.9455, abs=1e-3) and p.high == pytest.approx(0.9982, abs=1e-3)  # Wilson
    assert precision.estimate(scene.run, 0.999).proposal is None
    # Bulk-accepted values are not judgements: they do not count, so auto-accept never feeds itself.
    run_bulk_action(
        do_create_bulk_action(QueueFilter(run=scene.run.pk, min_confidence=0.96), "accept", bob).pk
    )
    assert len(precision.judged_values(scene.run)) == 200


def test_blind_labels_judge_the_values_of_their_products(bob, tmp_path):
    scene, values = scene_with_confidences([0.5, 0.7, 0.9, 0.95, 0.99])  # values b0 .. b4
    labels = {0: "b0", 1: "something else", 2: "n/a", 3: "b3", 4: "b4"}
    for i, label in labels.items():
        value = values[i]
        GoldValue.objects.create(
            product=value.product,
            attribute_name=value.attribute.name,
            schema=value.attribute.schema,
            value=label,
            provenance=GoldValue.Provenance.BLIND,
            approved_by=bob,
        )
    do_review(values[4].pk, 0, "correct", bob, text="fixed")  # judged by hand: counted once, as wrong
    assert sorted(precision.judged_values(scene.run)) == [
        (0.5, True),
        (0.7, False),
        (0.9, False),  # a value where the label says the attribute is absent
        (0.95, True),
        (0.99, False),
    ]
    assert precision.estimate(scene.run, 0.98).note == (
        f"No estimate: {too_few(5)}, and {scene.run.model_dir}/slotwise.json has no "
        f'"calibration" block: {FIT}.'
    )


def test_below_200_judged_values_the_dev_figures_stand_in(bob, tmp_path):
    scene, values = scene_with_confidences(
        [0.5, 0.85, 0.92, 0.97], model_dir_with(tmp_path, {"precision_curve": {"hpd": CURVE}})
    )
    judge(values[:1], 1, bob)
    found = precision.estimate(scene.run, 0.98)
    assert (found.source, found.judged) == ("dev", 1)
    assert (found.proposal.threshold, found.proposal.n, found.proposal.low) == (0.9, 400, 0.97)
    assert found.note == (
        f"{too_few(1)}; until then the dev figures stand in, measured on the dev sets, not on this catalog"
    )
    # A model without the curve says what is missing and proposes nothing.
    missing = {
        None: 'has no "calibration" block',
        json.dumps({"hpd": 2.0}): "has no calibration → precision_curve → hpd",
        json.dumps({"precision_curve": {"ar": CURVE}}): "has no calibration → precision_curve → hpd",
    }
    for calibration, what in missing.items():
        model_dir = model_dir_with(tmp_path, calibration and json.loads(calibration))
        found = precision.estimate(type(scene.run)(decoder="hpd", model_dir=model_dir), 0.98)
        assert found.proposal is None and found.source == ""
        assert (
            found.note
            == f"No estimate: {too_few(found.judged)}, and {model_dir}/slotwise.json {what}: {FIT}."
        )
    with pytest.raises(config.NoPrecisionCurve, match="row 1 is not"):
        config.dev_precision_curve(
            config.run_model_path(
                model_dir_with(tmp_path, {"precision_curve": {"hpd": [[0.9, "x", 1, 0, 1]]}})
            ),
            "hpd",
        )


def test_the_page_proposes_a_threshold_and_accepting_takes_only_what_it_said(client_for, alice, tmp_path):
    scene, values = scene_with_confidences(
        [0.5, 0.85, 0.9, 0.97, 0.99], model_dir_with(tmp_path, {"precision_curve": {"hpd": CURVE}})
    )
    do_review(values[4].pk, 0, "reject", alice)  # rejected: auto-accept takes pending values only
    client = client_for(alice)
    page = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "98%"})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="threshold">0.900<' in body and 'id="estimate">98.5%<' in body and "97.0%–99.3%" in body
    assert (
        'id="accept-count">2<' in body and 'data-source="dev"' in body and "dev figures of this model" in body
    )
    response = client.post(
        reverse("review:start_auto_accept"),
        {"run": scene.run.pk, "status": "pending", "min_confidence": "0.9"},
    )
    assert response.status_code == 302 and "min_confidence" not in response["Location"]
    statuses = [ExtractedValue.objects.get(pk=v.pk).review.status for v in values]
    assert statuses == ["pending", "pending", "accepted", "accepted", "rejected"]
    job = BulkAction.objects.get()
    assert job.filters["min_confidence"] == "0.9" and job.filters["status"] == "pending"
    bad = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "lots"})
    assert (
        bad.status_code == 400
        and "target precision: &#x27;lots&#x27; is not a number" in bad.content.decode()
    )
    assert client.post(reverse("review:start_auto_accept"), {"run": scene.run.pk}).status_code == 400


def test_auto_accept_is_for_admins_only(client_for, bob):
    scene, _ = scene_with_confidences([0.9])
    client = client_for(bob)
    assert client.get(reverse("review:auto_accept"), {"run": scene.run.pk}).status_code == 403
    refused = client.post(reverse("review:start_auto_accept"), {"run": scene.run.pk, "min_confidence": "0"})
    assert refused.status_code == 403 and not BulkAction.objects.exists()
    assert "auto-accept-link" not in client.get(reverse("review:queue")).content.decode()
