"""One rule for "two decoders agree" (equal but for case), the same in the run comparison, the
review queue's disagreement sort and the A/B panel."""

import pytest

from evaluation.systems import Pair
from extraction.comparison import agreement_by_attribute, disagreements
from extraction.domain import values_agree
from extraction.models import Run
from review.filters import QueueFilter
from tests.support.factories import link_runs, make_run, make_scenario, make_values

pytestmark = pytest.mark.django_db


def test_values_agree_but_for_case_and_a_missing_value_only_with_a_missing_one():
    assert values_agree("Acme", "ACME") and values_agree(None, None)
    assert not values_agree("Acme", "Acme Inc") and not values_agree("Acme", None)
    assert not Pair("Brand", "acme", "Acme").differs and Pair("Brand", "acme", "other").differs


def test_a_case_only_difference_agrees_in_the_comparison_and_in_the_queue():
    scene = make_scenario(products=3, attributes=("Brand",))  # HPD says Brand0, Brand1, Brand2
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    brand = scene.attributes["Brand"]
    hpd_values = {v.product_id: v.value for v in scene.values}
    said = {0: hpd_values[scene.products[0].pk].upper(), 1: "other", 2: hpd_values[scene.products[2].pk]}
    make_values(ar, {(p, brand): (said[i], 0.9) for i, p in enumerate(scene.products)})
    link_runs(scene.run, ar)
    assert [v.product_id for v in disagreements(scene.run, ar)] == [scene.products[1].pk]
    (row,) = agreement_by_attribute(scene.run, ar)
    assert (row.compared, row.agreed) == (3, 2)
    queue = QueueFilter(run=scene.run.pk, sort="disagreement").ordered_values()
    flagged = {v.product_id: v.disagrees for v in queue}
    assert flagged == {scene.products[0].pk: 0, scene.products[1].pk: 1, scene.products[2].pk: 0}
