"""Bulk accept and reject over everything a filter matches, inline and in the background."""

import re
from concurrent.futures import ThreadPoolExecutor
from html import unescape

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from review import bulk
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.filters import QueueFilter
from review.models import BulkAction, GoldValue, ValueEvent
from tests.support.factories import make_scenario
from tests.support.held_transaction import HeldTransaction, in_own_connection
from tests.support.pages import refusal
from tests.support.workers import start_worker, stop_worker, wait_until


@override_settings(REVIEW_PAGE_SIZE=5)
@pytest.mark.django_db
def test_bulk_accept_covers_every_page_of_the_filter_and_keeps_corrections(client_for, bob, alice):
    scene = make_scenario(products=12)  # 12 Brand values: more than two pages of 5
    brand = [v for v in scene.values if v.attribute.name == "Brand"]
    do_review(brand[0].pk, 0, "correct", alice, text="Hand-fixed")
    client = client_for(bob)
    page = client.get(reverse("review:queue"), {"run": scene.run.pk, "attribute": "Brand"}).content.decode()
    assert "1–5 of 12" in page and "Accept all 11" in page
    response = client.post(
        reverse("review:bulk"), {"run": scene.run.pk, "attribute": "Brand", "action": "accept"}
    )
    assert response.status_code == 302
    assert (
        response["Location"]
        == f"{reverse('review:queue')}?run={scene.run.pk}&attribute=Brand&sort=confidence"
    )
    statuses = dict(scene.run.values.filter(attribute__name="Brand").values_list("pk", "review__status"))
    assert statuses.pop(brand[0].pk) == "corrected"  # a human correction is never overwritten
    assert set(statuses.values()) == {"accepted"}
    assert set(scene.run.values.filter(attribute__name="Color").values_list("review__status", flat=True)) == {
        "pending"
    }
    assert ValueEvent.objects.filter(action="bulk_accept", actor=bob).count() == 11
    # only the hand correction is gold: no person looked at the values accepted in bulk
    assert GoldValue.objects.filter(attribute_name="Brand").count() == 1
    assert GoldValue.objects.get(source=brand[0]).value == "Hand-fixed"


@override_settings(REVIEW_BULK_CHUNK=4)
@pytest.mark.django_db
def test_bulk_reject_works_in_chunks_and_leaves_values_changed_meanwhile(bob, alice):
    scene = make_scenario(products=10)
    job = do_create_bulk_action(QueueFilter(run=scene.run.pk), "reject", bob)
    assert job.total == 20
    # A value corrected after the job was made is left alone: corrections are never overwritten.
    do_review(scene.values[3].pk, 0, "correct", alice, text="Kept")
    job = run_bulk_action(job.pk)
    assert (job.status, job.done, job.total, job.changed, job.percent) == ("done", 19, 19, 19, 100)
    assert scene.run.values.filter(review__status="rejected").count() == 19
    assert scene.run.values.get(pk=scene.values[3].pk).review.reviewed_value == "Kept"


def test_it_refuses_a_bad_bulk_request(client_for, bob, db):
    scene = make_scenario(products=1)
    client = client_for(bob)
    response = client.post(reverse("review:bulk"), {"run": scene.run.pk, "action": "delete"})
    assert refusal(response) == "action: 'delete' is not one of accept, reject"
    response = client.post(
        reverse("review:bulk"), {"run": scene.run.pk, "status": "nope", "action": "accept"}
    )
    assert refusal(response) == (
        "Cannot run the bulk action: status: 'nope' is not one of pending, accepted, corrected, rejected"
    )
    assert not BulkAction.objects.exists()


@override_settings(REVIEW_BULK_INLINE_LIMIT=10)
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_large_bulk_action_runs_on_a_celery_worker_with_progress(client_for, bob, tmp_path):
    scene = make_scenario(products=30)  # 60 values, above the inline limit of 10
    worker = start_worker(queues="light", name="review-bulk", log_path=tmp_path / "worker.log")
    try:
        client = client_for(bob)
        response = client.post(reverse("review:bulk"), {"run": scene.run.pk, "action": "accept"})
        job = BulkAction.objects.get()
        assert response["Location"] == reverse("review:bulk_status", args=[job.pk])
        wait_until(
            lambda: BulkAction.objects.get(pk=job.pk).status == "done", timeout=90, what="the bulk job"
        )
        page = client.get(response["Location"]).content.decode()
        assert "60 of 60" in page and "Back to the queue" in page
        assert scene.run.values.filter(review__status="accepted").count() == 60
    finally:
        stop_worker(worker)


@pytest.mark.django_db
def test_bulk_accept_on_the_linked_run_keeps_a_corrected_gold(bob, alice):
    from extraction.models import Run
    from tests.support.factories import link_runs, make_run, make_values

    scene = make_scenario(products=2, attributes=("Brand",))
    ar = make_run(scene.products, scene.schema, decoder=Run.Decoder.AR)
    make_values(ar, {(p, scene.attributes["Brand"]): ("AR says", 0.5) for p in scene.products})
    link_runs(scene.run, ar)
    do_review(scene.values[0].pk, 0, "correct", alice, text="Fixed by hand")
    run_bulk_action(do_create_bulk_action(QueueFilter(run=ar.pk), "accept", bob).pk)
    golds = dict(GoldValue.objects.values_list("product_id", "value"))
    assert golds == {scene.products[0].pk: "Fixed by hand"}  # AR's values accepted in bulk: not gold
    # Product 1's AR value accepted by hand is gold; rejecting the AR values in bulk takes it back.
    do_review(ar.values.get(product=scene.products[1]).pk, 1, "reject", bob)
    do_review(ar.values.get(product=scene.products[1]).pk, 2, "accept", bob)
    assert GoldValue.objects.get(product=scene.products[1]).value == "AR says"
    run_bulk_action(do_create_bulk_action(QueueFilter(run=ar.pk), "reject", bob).pk)
    assert dict(GoldValue.objects.values_list("product_id", "value")) == {
        scene.products[0].pk: "Fixed by hand"
    }


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def banner(response) -> list[str]:
    """The messages the page shows at its top (their text; a bulk action's also has an Undo button)."""
    found = re.findall(r'<li class="msg-[a-z]+">(.*?)(?:<form.*?)?</li>', response.content.decode(), re.S)
    return [unescape(m).strip() for m in found]


@pytest.mark.django_db(transaction=True)
def test_two_bulk_actions_at_once_on_the_same_values_both_end_and_the_second_says_what_it_skipped(alice, bob):
    scene = make_scenario(products=4)  # 4 Brand and 4 Color values: both actions run in the request
    run = scene.run.pk
    alices, bobs = signed_in(alice), signed_in(bob)

    def alice_rejects_the_brands():
        response = alices.post(reverse("review:bulk"), {"run": run, "attribute": "Brand", "action": "reject"})
        assert response.status_code == 302

    # Alice's bulk reject has changed the Brand values and holds their locks, uncommitted; bob's bulk
    # accept of the whole run reads the values as they were, then waits for those locks.
    def bob_accepts_the_run():
        return bobs.post(reverse("review:bulk"), {"run": run, "action": "accept"}, follow=True)

    with ThreadPoolExecutor(1) as pool, HeldTransaction(alice_rejects_the_brands) as alices_action:
        bobs_action = pool.submit(in_own_connection(bob_accepts_the_run))
        wait_until(alices_action.waiting_behind, timeout=60, what="bob's bulk accept waiting for alice's")
        alices_action.commit()
        response = bobs_action.result(timeout=60)

    assert response.redirect_chain[0][1] == 302 and response.status_code == 200
    assert banner(response) == ["Accepted 4 values, 4 skipped: changed by someone else."]
    bobs_job = BulkAction.objects.get(created_by=bob)
    assert (bobs_job.status, bobs_job.changed, bobs_job.skipped) == ("done", 4, 4)
    assert bobs_job.finished_at is not None
    assert BulkAction.objects.get(created_by=alice).status == "done"
    statuses = set(scene.run.values.values_list("attribute__name", "review__status"))
    assert statuses == {("Brand", "rejected"), ("Color", "accepted")}  # alice's rejections stand
    assert set(ValueEvent.objects.values_list("value__attribute__name", "action", "actor__username")) == {
        ("Brand", "bulk_reject", "alice"),
        ("Color", "bulk_accept", "bob"),
    }


@override_settings(REVIEW_BULK_INLINE_LIMIT=10)
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_background_bulk_action_skips_the_values_changed_after_it_started(alice, bob, tmp_path):
    scene = make_scenario(products=12)  # 24 values, above the inline limit: a job in chunks of 8
    ids = sorted(v.pk for v in scene.values)
    changed_by_alice = ids[9:12]  # in the job's second chunk
    worker = start_worker(
        queues="light",
        name="review-bulk-race",
        log_path=tmp_path / "worker.log",
        env={"REVIEW_BULK_CHUNK": "8"},
    )
    try:
        client = signed_in(bob)

        def alice_rejects_three():
            for value_id in changed_by_alice:
                do_review(value_id, 0, "reject", alice)

        # The job reads the values (version 0) when it starts; its second chunk then waits for
        # alice's locks, and her rejections commit before it goes on.
        with HeldTransaction(alice_rejects_three) as alices_change:
            response = client.post(reverse("review:bulk"), {"run": scene.run.pk, "action": "accept"})
            job = BulkAction.objects.get()
            assert response["Location"] == reverse("review:bulk_status", args=[job.pk])
            wait_until(alices_change.waiting_behind, timeout=90, what="the job's chunk waiting for alice's")
            assert BulkAction.objects.get(pk=job.pk).done == 8  # the first chunk is in
        wait_until(lambda: BulkAction.objects.get(pk=job.pk).finished, timeout=90, what="the bulk job")
        job.refresh_from_db()
        assert (job.status, job.error, job.done, job.total, job.changed, job.skipped) == (
            "done",
            "",
            24,
            24,
            21,
            3,
        )
        statuses = dict(scene.run.values.values_list("pk", "review__status"))
        assert {pk for pk, status in statuses.items() if status == "rejected"} == set(changed_by_alice)
        assert set(statuses.values()) == {"accepted", "rejected"}
        page = client.get(response["Location"]).content.decode()
        assert 'id="job-status">Done<' in page
        assert '<span id="job-skipped">3 skipped: changed by someone else</span>' in page
    finally:
        stop_worker(worker)


@override_settings(REVIEW_BULK_CHUNK=2)
@pytest.mark.django_db
def test_an_inline_bulk_action_that_fails_is_marked_failed_and_keeps_its_first_chunks(
    client_for, bob, monkeypatch
):
    scene = make_scenario(products=2)  # 4 values: two chunks of 2, within the request
    ids = sorted(v.pk for v in scene.values)
    review_locked = bulk.review_locked

    def fail_on_the_third_value(value, *args, **kwargs):
        if value.pk == ids[2]:
            raise RuntimeError("disk full")
        return review_locked(value, *args, **kwargs)

    monkeypatch.setattr(bulk, "review_locked", fail_on_the_third_value)
    response = client_for(bob).post(
        reverse("review:bulk"), {"run": scene.run.pk, "action": "accept"}, follow=True
    )

    job = BulkAction.objects.get()
    assert (job.status, job.error, job.done, job.changed) == ("failed", "RuntimeError: disk full", 2, 2)
    assert job.finished_at is not None
    assert response.status_code == 200
    assert banner(response) == [
        f"Bulk accept #{job.pk} failed: RuntimeError: disk full. The 2 values it changed before stay changed."
    ]
    statuses = dict(scene.run.values.values_list("pk", "review__status"))
    assert [statuses[pk] for pk in ids] == ["accepted", "accepted", "pending", "pending"]
