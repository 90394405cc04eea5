"""Auto-accept pooled over attributes (review/precision.py): where no attribute's own blind labels
reach the target, one threshold for the attributes without one, offered only where the Wilson lower
end of all their blind-labelled values above it reaches the target; an attribute whose own labels
refute the pool is left out of it and never accepted on its evidence, while its labels still count
in the bound (leaving them out would choose the sample by its outcome); the page says what was
pooled, over how many values, and the interval's lower end."""

import re
from html import unescape

import pytest
from django.urls import reverse

from extraction.engine.calibration import wilson
from extraction.models import ExtractedValue
from review import precision
from review.models import BulkAction, GoldValue
from tests.support.factories import make_scenario
from tests.support.pages import refusal

pytestmark = pytest.mark.django_db

ATTRIBUTES = ("Brand", "Color", "Size")
# Nine attributes besides Color, so that Color's errors leave the whole pool above 98%.
MANY = ("Brand", "Color", "Flavor", "Gender", "Material", "Pattern", "Scent", "Size", "Style", "Type")


def catalog_of(confidences, attributes=ATTRIBUTES):
    """One run over len(confidences) products, each product's values at its confidence."""
    scene = make_scenario(
        products=len(confidences),
        attributes=attributes,
        value_of=lambda i, name: (f"{name[0].lower()}{i}", confidences[i]),
    )
    return scene, sorted(scene.values, key=lambda v: (v.product.sku, v.attribute.position))


def label_blind(values, wrong, user):
    """Blind labels of `values`: the value itself, except another one where wrong(value)."""
    GoldValue.objects.bulk_create(
        GoldValue(
            product=v.product,
            attribute_name=v.attribute.name,
            schema=v.attribute.schema,
            value="something else" if wrong(v) else v.value,
            provenance=GoldValue.Provenance.BLIND,
            approved_by=user,
        )
        for v in values
    )


def index(value) -> int:
    return int(value.product.sku[1:])


def statuses(scene, attributes=ATTRIBUTES) -> dict[str, list[str]]:
    found = {name: [] for name in attributes}
    for name, status in ExtractedValue.objects.filter(run=scene.run).values_list(
        "attribute__name", "review__status"
    ):
        found[name].append(status)
    return {name: sorted(s) for name, s in found.items()}


def test_attributes_short_alone_share_a_threshold_whose_pooled_lower_bound_reaches_the_target(alice):
    # 80 products labelled blind, every value right at 0.99, 20 at 0.6 half right; 30 more unlabelled.
    scene, values = catalog_of([0.99] * 80 + [0.6] * 20 + [0.99] * 30)
    label_blind([v for v in values if index(v) < 100], lambda v: index(v) >= 80 and index(v) % 2, alice)
    # alone, 80 all-right values fall short of 98%; the 240 of the three together do not
    assert wilson(80, 80)[0] < 0.98 <= wilson(240, 240)[0]
    found = precision.estimate(scene.run, 0.98)
    pool = found.pool
    assert (pool.point.threshold, pool.point.n, pool.point.precision) == (0.99, 240, 1.0)
    assert pool.point.low == pytest.approx(wilson(240, 240)[0])
    assert pool.members == ATTRIBUTES and pool.left_out == ()
    for name in ATTRIBUTES:
        attribute = found.of(name)
        assert attribute.pooled and attribute.proposal == pool.point and attribute.needed == 0
        assert (attribute.labelled, attribute.right) == (100, 90)  # its own figures stay its own
    assert {a.attribute for a in found.offered} == set(ATTRIBUTES)


def test_no_pooled_threshold_where_the_pooled_lower_bound_misses_the_target(client_for, alice):
    # 100 products labelled blind at 0.99: Brand and Color one wrong each, too few to refute either
    # alone, but the 298 right of 300 pooled have a lower end below 98%.
    scene, values = catalog_of([0.99] * 100 + [0.99] * 20)
    label_blind(
        [v for v in values if index(v) < 100],
        lambda v: index(v) == 7 and v.attribute.name in ("Brand", "Color"),
        alice,
    )
    assert wilson(99, 100)[1] >= 0.98 and wilson(298, 300)[0] < 0.98
    found = precision.estimate(scene.run, 0.98)
    assert found.pool is None and found.offered == []
    assert found.pooled_over == ATTRIBUTES and found.pool_needed > 0
    # at 97% the same evidence does reach it
    assert wilson(298, 300)[0] >= 0.97
    assert precision.estimate(scene.run, 0.97).pool.point.n == 300
    client = client_for(alice)
    page = unescape(
        client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "98"}).content.decode()
    )
    assert 'id="pool-none"' in page and 'id="pool-offer"' not in page
    assert f'id="pool-needed">{found.pool_needed}<' in page
    assert 'class="primary auto-accept"' not in page
    refused = client.post(
        reverse("review:start_auto_accept"), {"run": scene.run.pk, "attribute": "Size", "target": "98"}
    )
    assert "Cannot auto-accept Size: no threshold reaches 98.0%" in refusal(refused)
    assert not BulkAction.objects.exists()
    assert statuses(scene)["Size"] == ["pending"] * 120


def test_a_refuted_attribute_s_labels_still_count_so_leaving_it_out_cannot_make_a_pool(alice):
    # 100 products labelled blind at 0.99: Brand and Size all right, Color invented on 10 of them.
    # Brand and Size alone (200 of 200) would reach 98%, but they were chosen by the labels'
    # outcome: counted whole, 290 of 300 fall short, and nothing is offered.
    scene, values = catalog_of([0.99] * 120)
    label_blind(
        [v for v in values if index(v) < 100],
        lambda v: v.attribute.name == "Color" and index(v) % 10 == 0,
        alice,
    )
    assert wilson(200, 200)[0] >= 0.98 > wilson(290, 300)[0]
    found = precision.estimate(scene.run, 0.98)
    assert found.pool is None and found.offered == []
    assert found.pooled_over == ATTRIBUTES


def test_an_attribute_its_own_labels_refute_is_left_out_and_never_accepted_on_the_pool(client_for, alice):
    # 100 products labelled blind at 0.99: nine attributes all right, Color invented on 10 of them
    # (an attribute the titles never name, read at 0.99); 20 more products unlabelled.
    scene, values = catalog_of([0.99] * 120, MANY)
    label_blind(
        [v for v in values if index(v) < 100],
        lambda v: v.attribute.name == "Color" and index(v) % 10 == 0,
        alice,
    )
    found = precision.estimate(scene.run, 0.98)
    pool = found.pool
    members = tuple(name for name in MANY if name != "Color")
    assert pool.members == members and [name for name, _ in pool.left_out] == ["Color"]
    color = dict(pool.left_out)["Color"]
    assert (color.n, color.precision) == (100, 0.9) and color.high == pytest.approx(wilson(90, 100)[1])
    assert color.high < 0.98
    # the bound counts Color's labels too (990 right of 1,000), and it still reaches the target
    assert (pool.point.n, pool.point.precision) == (1000, 0.99)
    assert pool.point.low == pytest.approx(wilson(990, 1000)[0]) and pool.point.low >= 0.98
    assert found.of("Color").proposal is None and not found.of("Color").pooled

    client = client_for(alice)
    page = client.get(reverse("review:auto_accept"), {"run": scene.run.pk, "target": "98"})
    text = " ".join(unescape(re.sub(r"<[^>]+>", " ", page.content.decode())).split())
    assert (
        f"Pooled over {', '.join(members)} : 1000 blind-labelled values at or above it, 99.0% right" in text
    )
    assert f"(95% Wilson interval {precision.percent(pool.point.low)}–" in text
    assert "the left-out attributes' values below counted too" in text
    assert (
        "Left out, as their own labels at this confidence fall short of 98.0%: Color (100 labelled values, 90.0% right, at most"
        in text
    )
    body = page.content.decode()
    assert body.count('<span class="pooled">(pooled)</span>') == len(members)
    assert 'data-attribute="Color" data-offered=""' in body

    for name in ("Brand", "Size"):
        accepted = client.post(
            reverse("review:start_auto_accept"), {"run": scene.run.pk, "attribute": name, "target": "98"}
        )
        assert accepted.status_code == 302
    refused = client.post(
        reverse("review:start_auto_accept"), {"run": scene.run.pk, "attribute": "Color", "target": "98"}
    )
    assert "Cannot auto-accept Color" in refusal(refused)
    found_statuses = statuses(scene, MANY)
    assert found_statuses["Brand"] == found_statuses["Size"] == ["accepted"] * 120
    assert found_statuses["Color"] == found_statuses["Flavor"] == ["pending"] * 120
    assert {job.filters["min_confidence"] for job in BulkAction.objects.all()} == {"0.99"}


def test_an_attribute_with_its_own_threshold_keeps_it_and_is_not_pooled(alice):
    # Brand has 200 all-right labelled values of its own at 0.99; Color and Size only 100 products'
    # worth, all right at 0.99: Brand alone, the other two pooled.
    scene, values = catalog_of([0.99] * 200)
    label_blind([v for v in values if v.attribute.name == "Brand" or index(v) < 100], lambda v: False, alice)
    found = precision.estimate(scene.run, 0.98)
    brand = found.of("Brand")
    assert (
        not brand.pooled
        and brand.proposal.n == 200
        and brand.proposal.low == pytest.approx(wilson(200, 200)[0])
    )
    assert found.pooled_over == ("Color", "Size") and found.pool.members == ("Color", "Size")
    assert found.pool.point.n == 200 and found.of("Size").pooled
