"""Any two runs of the same products side by side on the same blind gold, per attribute: an old and
a new model, HPD and AR, whether or not they were started together."""

import re

import pytest
from django.urls import reverse

from extraction.engine import metric
from review import quality
from review.actions import do_review
from review.blind import do_blind_label
from tests.support.factories import make_catalog, make_product, make_run, make_scenario, make_values
from tests.support.pages import refusal

pytestmark = pytest.mark.django_db


def two_models(products=24):
    """An old model's run (right on even products) and a new one's (right on all but every fifth),
    started apart, not linked; the first 20 products labelled blind."""
    scene = make_scenario(
        products=products,
        value_of=lambda i, name: (f"{name.lower()}{i}" if i % 2 == 0 else "old guess", 0.6),
    )
    new = make_run(scene.products, scene.schema, name="new model")
    make_values(
        new,
        {
            (p, a): (f"{a.name.lower()}{i}" if i % 5 else "new guess", 0.8)
            for i, p in enumerate(scene.products)
            for a in scene.attributes.values()
        },
    )
    return scene, scene.run, new


def test_two_runs_are_scored_on_the_same_blind_gold_per_attribute(client_for, bob):
    scene, old, new = two_models()
    for i, product in enumerate(scene.products[:20]):
        do_blind_label(product, scene.schema.pk, {"Brand": f"brand{i}", "Color": f"color{i}"}, bob)
    # gold that one of them supplied (the new run's value accepted by hand) is not used by either
    do_review(new.values.get(product=scene.products[21], attribute__name="Brand").pk, 0, "accept", bob)
    scope, (a, b) = quality.compared(old, new, {})
    assert scope.size == 24 and a.gold.total == b.gold.total == 40
    truth = {
        (p.pk, n): f"{n.lower()}{i}" for i, p in enumerate(scene.products[:20]) for n in ("Brand", "Color")
    }
    for col, run in ((a, old), (b, new)):
        expected = metric.evaluate(
            ("Shoes", v.attribute.name, v.value, [truth[(v.product_id, v.attribute.name)]])
            for v in run.values.select_related("attribute")
            if (v.product_id, v.attribute.name) in truth
        )
        assert col.report.micro.f1 == pytest.approx(expected.micro.f1)
        assert col.report.per_attribute["Brand"].f1 == pytest.approx(expected.per_attribute["Brand"].f1)
        assert col.interval is not None  # 20 products: an interval is given
    assert b.report.micro.f1 > a.report.micro.f1

    body = (
        client_for(bob).get(reverse("review:dashboard"), {"run": old.pk, "compare": new.pk}).content.decode()
    )
    assert 'id="compare-scope" data-products="24"' in body and "same blind labels" in body
    for col in (a, b):
        shown = float(re.search(rf'data-run="{col.run.pk}" data-f1="([0-9.]+)"', body).group(1))
        assert shown == pytest.approx(col.report.micro.f1, abs=1e-6)
    assert f"F1 #{old.pk} HPD" in body and f"F1 #{new.pk} HPD" in body  # per attribute, side by side


def test_runs_of_other_products_say_there_is_nothing_to_compare_and_bad_choices_are_a_clear_400(
    client_for, bob
):
    scene, old, _ = two_models(products=2)
    elsewhere = make_product(make_catalog(), scene.schema.category)
    other = make_run([elsewhere], scene.schema)
    make_values(other, {(elsewhere, scene.attributes["Brand"]): ("x", 0.5)})
    client = client_for(bob)
    body = client.get(reverse("review:dashboard"), {"run": old.pk, "compare": other.pk}).content.decode()
    assert f"Run #{other.pk} decoded none of run #{old.pk}'s products" in body
    for compare, says in (
        ("abc", "compare: expected a number, the id of a row (1 or more), got &#x27;abc&#x27;"),
        ("99999", "no run #99999"),
    ):
        response = client.get(reverse("review:dashboard"), {"run": old.pk, "compare": compare})
        assert response.status_code == 400 and says in response.content.decode()


@pytest.mark.parametrize("compare", ["²", "①", "１"])
def test_a_compare_not_written_in_ascii_digits_is_a_clear_400(client_for, bob, compare):
    _, old, _ = two_models(products=2)
    response = client_for(bob).get(reverse("review:dashboard"), {"run": old.pk, "compare": compare})
    assert refusal(response) == (
        f"Cannot show the run: compare: expected a number, the id of a row (1 or more), got {compare!r}"
    )
