"""A run that recovered from a failure says so on its page: a batch taken over from a dead worker,
given back by the reaper, a worker that lost PostgreSQL and reconnected."""

from datetime import timedelta

import pytest
from django.db import OperationalError
from django.urls import reverse
from django.utils import timezone

from extraction.models import RunIncident, WorkItem
from extraction.services import RunRequest, do_start_run
from runner.leases import lease_batch, release_expired_leases
from runner.loop import recover_from_database_loss
from tests.support.runs_catalog import make_catalog

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(db):
    return do_start_run(RunRequest(decoder="hpd", catalog=make_catalog(shoes=6, coffee=0), batch_size=3))[0]


def expire(items) -> None:
    WorkItem.objects.filter(id__in=[i.id for i in items]).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def test_taking_over_a_dead_workers_batch_is_told_on_the_run_page(client_for, bob, run):
    lost = lease_batch(run.id, "w1@host/pid7", 3)
    expire(lost)
    lease_batch(run.id, "w2@host/pid8", 3)  # one of them: a dead worker's products are retried apart
    incident = RunIncident.objects.get(run=run)
    assert incident.kind == RunIncident.Kind.LEASE_TAKEN_OVER
    assert incident.message.startswith(
        "w2@host/pid8 took over 1 product whose lease by w1@host/pid7 had expired"
    )
    page = client_for(bob).get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert 'id="run-incidents"' in page
    assert "took over 1 product whose lease by w1@host/pid7 had expired" in page


def test_a_fresh_lease_records_nothing(run):
    lease_batch(run.id, "w1", 3)
    lease_batch(run.id, "w2", 3)
    assert not RunIncident.objects.exists()


def test_the_reaper_giving_a_batch_back_is_told(run):
    expire(lease_batch(run.id, "w1@host/pid7", 3))
    assert release_expired_leases() == 3
    incident = RunIncident.objects.get(run=run)
    assert incident.kind == RunIncident.Kind.LEASE_RELEASED
    assert "gave back 3 products whose lease by w1@host/pid7 had expired" in incident.message
    assert "queued again" in incident.message


@pytest.mark.django_db(transaction=True)  # it reconnects: a closed connection ends a test's transaction
def test_a_worker_that_lost_postgres_hands_its_batch_back_and_says_so(run):
    held = lease_batch(run.id, "w1@host/pid7", 3)
    other = lease_batch(run.id, "w2@host/pid8", 3)
    error = OperationalError("server closed the connection unexpectedly\nThis probably means ...")
    recover_from_database_loss(run.id, "w1@host/pid7", [i.id for i in held], error)
    # Its own batch is queued again at once; another worker's lease is left alone.
    statuses = dict(WorkItem.objects.filter(run=run).values_list("id", "status"))
    assert {statuses[i.id] for i in held} == {WorkItem.Status.QUEUED}
    assert {statuses[i.id] for i in other} == {WorkItem.Status.LEASED}
    incident = RunIncident.objects.get(run=run)
    assert incident.kind == RunIncident.Kind.DATABASE_LOST
    assert "w1@host/pid7 lost its PostgreSQL connection (OperationalError: server closed the connection" in (
        incident.message
    )
    assert "the 3 products it held went back to the queue unwritten" in incident.message
