"""Where cut values lead the review queue, one short line says why they come first (issue #52)."""

import re

import pytest
from django.urls import reverse

from extraction.models import ExtractedValue
from review.opening import open_reviews
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db
LINE = 'id="cut-first"'


def test_the_queue_says_why_cut_values_come_first_where_they_lead_it(client_for, alice, bob):
    scene = make_scenario(products=4)
    queue = reverse("review:queue")
    # negative control: nothing cut, no line
    assert LINE not in client_for(bob).get(queue, {"run": scene.run.pk}).content.decode()

    most_confident = max(scene.values, key=lambda v: v.confidence)
    ExtractedValue.objects.filter(pk=most_confident.pk).update(truncated=True)
    open_reviews(ExtractedValue.objects.filter(run=scene.run))  # as the worker writing them does
    for user in (alice, bob):
        for sort in ("confidence", "useful"):
            body = client_for(user).get(queue, {"run": scene.run.pk, "sort": sort}).content.decode()
            first_row = re.search(r'<form id="value-(\d+)" class="vrow', body)
            assert first_row.group(1) == str(most_confident.pk), sort  # the cut value leads
            assert body.index(LINE) < first_row.start()  # the line above it
            line = body.split(LINE, 1)[1].split("</p>", 1)[0]
            assert "Cut values come first: each filled its slot, so it may be missing its last words" in line
            assert "a larger slot on the attribute's schema page stops the cutting" in line
    # a filter the cut value is not in: nothing cut leads, no line
    other = next(v for v in scene.values if v.attribute.name != most_confident.attribute.name)
    body = (
        client_for(bob).get(queue, {"run": scene.run.pk, "attribute": other.attribute.name}).content.decode()
    )
    assert LINE not in body
