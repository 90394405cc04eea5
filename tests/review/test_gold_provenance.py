"""Honest gold: each gold value knows how it was made, and a run is never scored on gold it supplied.

The case of issue 14: a bulk accept of run X's values (many of them wrong) made the dashboard score
X against its own values. Here X's values accepted by hand count for another run Y over the same
products, never for X; blind labels count for every run. Issue 30: values accepted in bulk
(auto-accept included) are never gold, for any run nor for training.
"""

import json
import re

import pytest
from django.core.management import call_command
from django.template.defaultfilters import floatformat
from django.urls import reverse

from extraction.engine import calibration, metric
from extraction.models import Run
from review import quality
from review.actions import do_review, do_undo
from review.blind import do_blind_label
from review.models import GoldValue
from tests.support.factories import link_runs, make_run, make_scenario, make_values

pytestmark = pytest.mark.django_db
Provenance = GoldValue.Provenance


def two_runs(products=8):
    """Run X (HPD) right on even products and wrong on odd ones, run Y (AR) right on every third."""
    scene = make_scenario(
        products=products,
        value_of=lambda i, name: (f"{name.lower()}{i}" if i % 2 == 0 else "wrong", 0.55 + 0.05 * (i % 8)),
    )
    y = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    make_values(
        y,
        {
            (p, a): (f"{a.name.lower()}{i}" if i % 3 == 0 else "other", 0.7)
            for i, p in enumerate(scene.products)
            for a in scene.attributes.values()
        },
    )
    link_runs(scene.run, y)
    return scene, scene.run, y


def f1_of(run, gold_of) -> float:
    """Micro F1 of `run` computed here, independently, against the gold `gold_of(value)`."""
    report = metric.evaluate(
        (v.product.category.name, v.attribute.name, v.value, [gold_of(v)])
        for v in run.values.select_related("product__category", "attribute")
    )
    return report.micro.f1


def test_values_accepted_in_bulk_are_never_gold_nor_training_data(client_for, bob, tmp_path):
    scene, x, y = two_runs()
    client = client_for(bob)
    response = client.post(reverse("review:bulk"), {"run": x.pk, "action": "accept"})
    assert response.status_code == 302 and x.values.filter(review__status="accepted").count() == 16
    assert not GoldValue.objects.exists()
    assert quality.column(y, {}).gold.total == 0  # Y is not scored on values no person looked at
    assert b"".join(client.get(reverse("review:gold_download")).streaming_content) == b""
    out = tmp_path / "gold.jsonl"
    call_command("export_gold", out=str(out))
    assert out.read_text() == ""
    # Still approved values: the export of approved values carries them.
    export = client.post(reverse("review:export"), {"run": x.pk, "format": "json", "shape": "long"})
    assert len(json.loads(export.content)) == 16
    # A person correcting one of them makes that one gold; undoing it takes it back again.
    value = x.values.first()
    do_review(value.pk, 1, "correct", bob, text="Typed")
    assert GoldValue.objects.get().provenance == Provenance.CORRECTED
    do_undo(bob)
    assert not GoldValue.objects.exists()


def test_values_accepted_from_run_x_do_not_score_x_but_do_score_y(client_for, bob):
    scene, x, y = two_runs()
    client = client_for(bob)
    for value in x.values.all():
        do_review(value.pk, 0, "accept", bob)
    assert GoldValue.objects.filter(provenance=Provenance.ACCEPTED, from_run=x).count() == 16

    x_column, y_column = (
        quality.column(x, quality.default_prices()),
        quality.column(y, quality.default_prices()),
    )
    assert x_column.gold.total == 0 and x_column.gold.left_out == 16  # X never meets its own values
    assert y_column.gold.total == 16 and y_column.gold.by_kind == [("Acceptance of a run's value", 16)]
    x_values = {(v.product_id, v.attribute_id): v.value for v in x.values.all()}
    expected = f1_of(y, lambda v: x_values[(v.product_id, v.attribute_id)])
    assert 0 < expected < 1 and y_column.report.micro.f1 == pytest.approx(expected)

    body = client.get(reverse("review:dashboard"), {"run": x.pk}).content.decode()
    assert f'data-run="{x.pk}" data-used="0" data-left-out="16"' in body
    assert f'data-run="{y.pk}" data-used="16" data-left-out="0"' in body
    shown = float(re.search(rf'data-run="{y.pk}" data-f1="([0-9.]+)"', body).group(1))
    assert shown == pytest.approx(expected, abs=1e-6)


def test_blind_labels_count_for_every_run(bob):
    scene, x, y = two_runs()
    for i, product in enumerate(scene.products):
        do_blind_label(product, scene.schema.pk, {"Brand": f"brand{i}", "Color": f"color{i}"}, bob)
    truth = {
        (p.pk, a.pk): f"{a.name.lower()}{i}"
        for i, p in enumerate(scene.products)
        for a in scene.attributes.values()
    }
    for run in (x, y):
        col = quality.column(run, quality.default_prices())
        assert col.gold.total == 16 and col.gold.by_kind == [("Typed blind", 16)] and col.gold.left_out == 0
        assert col.report.micro.f1 == pytest.approx(
            f1_of(run, lambda v: truth[(v.product_id, v.attribute_id)])
        )
    # X is right on the even half, Y on every third product.
    assert quality.column(x, {}).report.micro.f1 > quality.column(y, {}).report.micro.f1


def test_a_correction_of_x_counts_for_y_only_and_says_which_run(bob):
    scene, x, y = two_runs(products=3)
    wrong = next(v for v in x.values.select_related("attribute") if v.value == "wrong")
    do_review(wrong.pk, 0, "correct", bob, text="Fixed")
    gold = GoldValue.objects.get()
    assert (gold.provenance, gold.from_run_id, gold.value) == (Provenance.CORRECTED, x.pk, "Fixed")
    assert quality.column(x, {}).gold.total == 0
    assert quality.column(y, {}).gold.by_kind == [("Correction of a run's value", 1)]


def test_gold_follows_each_review_and_undo_with_its_provenance(bob):
    scene, x, y = two_runs(products=2)
    value = (
        x.values.select_related("attribute").filter(product=scene.products[0], attribute__name="Brand").get()
    )
    other = y.values.get(product=scene.products[0], attribute__name="Brand")
    do_review(other.pk, 0, "accept", bob)
    do_review(value.pk, 0, "set_na", bob)  # "brand0" -> n/a: a correction of X's value
    gold = GoldValue.objects.get()
    assert (gold.provenance, gold.from_run_id, gold.value) == (Provenance.CORRECTED, x.pk, "n/a")
    do_undo(bob)  # the gold goes back to Y's accepted value, and says so
    gold.refresh_from_db()
    assert (gold.provenance, gold.from_run_id, gold.value) == (Provenance.ACCEPTED, y.pk, "brand0")


def test_a_blind_label_outranks_reviews_of_model_values(client_for, bob):
    scene, x, y = two_runs(products=2)
    first = scene.products[0]
    do_review(y.values.get(product=first, attribute__name="Brand").pk, 0, "accept", bob)
    do_blind_label(first, scene.schema.pk, {"Brand": "Typed", "Color": "n/a"}, bob)
    assert set(GoldValue.objects.values_list("attribute_name", "value", "provenance", "from_run")) == {
        ("Brand", "Typed", Provenance.BLIND, None),
        ("Color", "n/a", Provenance.BLIND, None),
    }
    # Neither a single accept nor a bulk accept of a run's values replaces the blind labels.
    do_review(x.values.get(product=first, attribute__name="Color").pk, 0, "accept", bob)
    client_for(bob).post(reverse("review:bulk"), {"run": x.pk, "action": "accept"})
    for value in x.values.filter(product=scene.products[1]):
        do_review(value.pk, 1, "correct", bob, text=value.value)  # kept as it was, by hand
    blind = GoldValue.objects.filter(product=first)
    assert set(blind.values_list("value", "provenance")) == {
        ("Typed", Provenance.BLIND),
        ("n/a", Provenance.BLIND),
    }
    assert GoldValue.objects.filter(product=scene.products[1], provenance=Provenance.ACCEPTED).count() == 2


def test_the_interval_and_the_calibration_rest_on_honest_gold(bob):
    scene, x, y = two_runs(products=40)
    for i, product in enumerate(scene.products):
        do_blind_label(product, scene.schema.pk, {"Brand": f"brand{i}", "Color": f"color{i}"}, bob)
    col = quality.column(x, {})
    low, high = col.interval
    assert low < col.report.micro.f1 < high and 0.3 < low and high < 0.7  # right on half the products
    assert quality.column(x, {}).interval == col.interval  # seeded: the same on every page load
    pairs = quality.gold_pairs(x)
    confidences = [p.confidence for p in pairs]
    correct = [p.prediction == p.gold for p in pairs]
    assert col.calibration.values == 80 and col.calibration.ece == pytest.approx(
        calibration.ece(confidences, correct)
    )
    by_bin = {round(b.low, 1): b for b in col.calibration.bins if b.values}
    # Confidence 0.55 + 0.05 * (i % 8): even i (right) fall in 0.5-0.9 bins alternately with odd i (wrong).
    assert sum(b.values for b in col.calibration.bins) == 80 and len(col.calibration.bins) == 10
    assert by_bin[0.5].share_correct == 1.0 and by_bin[0.6].share_correct == 0.5
    # The ECE from the bins, by its definition, is the engine's ECE.
    from_bins = sum(b.values / 80 * abs(b.share_correct - b.mean_confidence) for b in by_bin.values())
    assert from_bins == pytest.approx(col.calibration.ece)


def test_the_dashboard_draws_a_reliability_diagram_per_run_beside_the_ece(client_for, bob):
    scene, x, y = two_runs(products=20)
    for i, product in enumerate(scene.products):
        do_blind_label(product, scene.schema.pk, {"Brand": f"brand{i}", "Color": "n/a"}, bob)
    body = client_for(bob).get(reverse("review:dashboard"), {"run": x.pk}).content.decode()
    for run in (x, y):
        figure = re.search(
            rf'<figure class="chart reliability" data-run="{run.pk}">.*?</figure>', body, re.S
        ).group(0)
        assert figure.count('class="bar-label"') == 10  # a count under each of the 10 bins
        ece = re.search(rf'class="ece" data-run="{run.pk}" data-values="(\d+)" data-ece="([0-9.]+)"', body)
        assert int(ece.group(1)) == 40  # every value was given (none n/a), all judged
        # the interval shown is the one the cell carries, to the three places the page gives
        low, high = re.search(
            rf'class="f1" data-run="{run.pk}" data-f1="[0-9.]+" data-low="([0-9.]+)" data-high="([0-9.]+)"',
            body,
        ).groups()
        shown = f'<span class="interval">95% interval {floatformat(float(low), 3)}–{floatformat(float(high), 3)}</span>'
        assert shown in body


def test_under_20_products_the_f1_has_no_interval_and_says_what_is_missing(client_for, bob):
    scene, x, y = two_runs(products=3)
    do_blind_label(scene.products[0], scene.schema.pk, {"Brand": "brand0", "Color": "n/a"}, bob)
    assert quality.column(x, {}).interval is None
    body = client_for(bob).get(reverse("review:dashboard"), {"run": x.pk}).content.decode()
    assert 'class="interval"' not in body and "0.250–0.250" not in body
    assert "on 1 product: an interval needs 19 more products with gold" in body
