"""Starting a run is idempotent for a short while: a double-submitted "Start run" makes one run."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from extraction.models import Run
from tests.support.runs_catalog import make_catalog

pytestmark = pytest.mark.django_db(transaction=True)


def start_form(catalog) -> dict:
    return {"catalog": str(catalog.pk), "decoder": "hpd", "model_dir": ""}


def test_two_identical_posts_at_once_make_one_run_and_a_third_opens_it(alice):
    catalog = make_catalog()
    barrier = threading.Barrier(2)

    def post(_):
        client = Client()
        client.force_login(alice)
        barrier.wait()  # both requests in flight together, as a double click sends them
        try:
            return client.post(reverse("extraction:start"), start_form(catalog))
        finally:
            connection.close()

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(post, range(2)))

    run = Run.objects.get()
    assert [r.status_code for r in responses] == [302, 302]
    assert {r["Location"] for r in responses} == {reverse("extraction:detail", args=[run.id])}

    client = Client()
    client.force_login(alice)
    third = client.post(reverse("extraction:start"), start_form(catalog), follow=True)
    assert Run.objects.count() == 1
    assert "no second run was started" in third.content.decode()


def test_the_same_run_starts_again_once_the_first_has_ended(client_for, alice):
    catalog = make_catalog()
    client = client_for(alice)
    page = client.get(reverse("extraction:start")).content.decode()
    assert "start one run, not two" in page  # the page says so before anyone clicks
    assert client.post(reverse("extraction:start"), start_form(catalog)).status_code == 302
    Run.objects.update(status=Run.Status.DONE)

    assert client.post(reverse("extraction:start"), start_form(catalog)).status_code == 302
    assert Run.objects.count() == 2
