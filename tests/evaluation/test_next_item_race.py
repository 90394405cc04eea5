"""One rater's requests sent at once (five votes from several tabs) leave them holding one item."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from evaluation.models import Assignment
from evaluation.voting import next_item
from tests.support.ab_factories import make_campaign, make_two_runs

pytestmark = pytest.mark.django_db(transaction=True)


def test_five_requests_at_once_hand_one_rater_one_item(carol):
    campaign = make_campaign(make_two_runs(n_products=8), raters_per_item=1, raters=[carol])
    barrier = threading.Barrier(5)

    def ask(_):
        barrier.wait()
        try:
            return next_item(campaign, carol).pk
        finally:
            connection.close()

    with ThreadPoolExecutor(5) as pool:
        handed = set(pool.map(ask, range(5)))

    open_assignments = Assignment.objects.filter(rater=carol, completed_at__isnull=True)
    assert open_assignments.count() == 1
    assert handed == {open_assignments.get().item_id}
