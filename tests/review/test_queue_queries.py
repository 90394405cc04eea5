"""Queries per queue page: a fixed number, whatever the page size (no query per row)."""

import re

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from extraction.models import Run
from review.actions import do_review
from tests.support.factories import link_runs, make_run, make_scenario, make_values

pytestmark = pytest.mark.django_db

# Session, user, roles, the run with its linked run (either direction), the total and the bulk and
# export counts (one aggregate), the page, the attribute choices, the reviewer's settings, and the
# full page's selects (runs, catalogs, categories); a later page adds its position.
MAX_QUERIES_FULL_PAGE = 12
# The useful order reads the filter's values once to rank them, then fetches the page's rows.
USEFUL_ORDER_EXTRA = 1
MAX_QUERIES_PARTIAL = 10
MAX_QUERIES_ROW_ACTION = 11
HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "queue-body"}


@pytest.fixture
def linked_scene(bob):
    """30 products x 2 attributes, an AR run linked to the HPD run, a few values reviewed (so rows
    show their reviewer and a corrected value)."""
    scene = make_scenario(products=30)
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    make_values(ar, {(v.product, v.attribute): ("other", 0.5) for v in scene.values})
    link_runs(scene.run, ar)
    do_review(scene.values[0].pk, 0, "accept", bob)
    do_review(scene.values[1].pk, 0, "correct", bob, text="Fixed")
    return scene


def queries_for(client, params: dict, size: int, **headers) -> tuple[int, int]:
    """(queries, rows shown) for one queue page of `size` rows."""
    with override_settings(REVIEW_PAGE_SIZE=size), CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("review:queue"), params, **headers)
    assert response.status_code == 200
    rows = len(re.findall(r'<form id="value-\d+" class="vrow', response.content.decode()))
    return len(captured), rows


@pytest.mark.parametrize("sort", ["confidence", "disagreement", "useful"])
def test_it_runs_the_same_few_queries_for_a_page_of_5_and_of_50(client_for, bob, linked_scene, sort):
    client = client_for(bob)
    params = {"run": linked_scene.run.pk, "sort": sort}
    small, shown_small = queries_for(client, params, 5)
    large, shown_large = queries_for(client, params, 50)
    assert (shown_small, shown_large) == (5, 50)
    assert small == large
    assert large <= MAX_QUERIES_FULL_PAGE + (USEFUL_ORDER_EXTRA if sort == "useful" else 0)


def test_its_htmx_partial_and_later_pages_stay_as_few(client_for, bob, linked_scene):
    client = client_for(bob)
    body = client.get(reverse("review:queue"), {"run": linked_scene.run.pk}).content.decode()
    cursor = re.search(r'id="next-page"[^>]*href="\?[^"]*after=([^"&]+)"', body).group(1)
    params = {"run": linked_scene.run.pk, "after": cursor}
    small, _ = queries_for(client, params, 5, **HTMX)
    large, shown = queries_for(client, params, 30, **HTMX)
    assert shown == 30
    assert small == large <= MAX_QUERIES_PARTIAL


def test_a_row_action_runs_a_fixed_number_of_queries(client_for, bob, linked_scene):
    """Accept: session, user, roles, the locked value, its update, history, gold (2: the blind check,
    one upsert), the row again with its linked run (2), the reviewer's settings; the test's own
    savepoints not counted."""
    client = client_for(bob)
    value = linked_scene.values[5]
    with CaptureQueriesContext(connection) as captured:
        response = client.post(
            reverse("review:review_value", args=[value.pk]),
            {"action": "accept", "version": "0"},
            HTTP_HX_REQUEST="true",
        )
    assert response.status_code == 200
    assert 'data-outcome="ok"' in response.content.decode()
    statements = [q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) <= MAX_QUERIES_ROW_ACTION, "\n".join(sql[:160] for sql in statements)
