"""The load benchmark's data and its after-check (the locust run itself is `make bench-load`)."""

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from extraction.models import ExtractedValue, Run
from review.actions import do_review
from tools.bench.load.data import bench_username, check, seed

pytestmark = pytest.mark.django_db
PASSWORD = "bench password 15"


@pytest.fixture
def seeded():
    return seed(products=30, users=3, password=PASSWORD)


def test_it_seeds_a_finished_run_with_four_values_a_product_and_reviewers(seeded):
    run = Run.objects.get(pk=seeded.run)
    assert run.status == Run.Status.DONE
    assert (seeded.products, seeded.values, seeded.users) == (30, 120, 3)
    assert ExtractedValue.objects.filter(run=run, review__status="pending").count() == 120
    # distinct reviewers, each able to sign in with the password (sign-in throttling never sees a failure)
    for n in (1, 2, 3):
        user = User.objects.get(username=bench_username(n))
        assert user.check_password(PASSWORD) and user.groups.filter(name="reviewer").exists()


def test_seeding_again_replaces_the_earlier_data(seeded):
    again = seed(products=10, users=2, password=PASSWORD)
    assert not Run.objects.filter(pk=seeded.run).exists()
    assert ExtractedValue.objects.count() == again.values == 40


def reviewed(user_number: int, value: ExtractedValue, action: str, text: str = "") -> dict:
    user = User.objects.get(username=bench_username(user_number))
    do_review(value.pk, value.review.version, action, user, text=text or None)
    return {"user": user.username, "value": value.pk, "action": action, "text": text}


def test_the_check_finds_every_confirmed_write_stored_once(seeded):
    values = list(ExtractedValue.objects.order_by("pk")[:3])
    records = [reviewed(1, values[0], "accept"), reviewed(2, values[1], "correct", "Fixed by 2")]
    result = check(records)
    assert (result.writes_recorded, result.lost, result.doubled, result.unrecorded) == (2, 0, 0, 0)


def test_the_check_counts_a_write_that_did_not_land_as_lost(seeded):
    value = ExtractedValue.objects.order_by("pk").first()
    result = check([{"user": bench_username(1), "value": value.pk, "action": "accept", "text": ""}])
    assert result.lost == 1
    assert result.problems == [f"value {value.pk}: not stored as {bench_username(1)} left it (accepted)"]


def test_the_check_counts_a_history_row_nobody_saw_succeed(seeded):
    first, second = ExtractedValue.objects.order_by("pk")[:2]
    records = [reviewed(1, first, "accept")]
    reviewed(
        1, second, "accept"
    )  # a write the simulated user never recorded (an answer it took for an error)
    result = check(records)
    assert (result.lost, result.unrecorded) == (0, 1)


def test_the_check_counts_a_value_written_twice_as_doubled(seeded):
    value = ExtractedValue.objects.order_by("pk").first()
    records = [reviewed(1, value, "correct", "first")]
    value.refresh_from_db()
    do_review(value.pk, value.review.version, "correct", value.review.reviewed_by, text="first!")
    value.refresh_from_db()
    do_review(value.pk, value.review.version, "correct", value.review.reviewed_by, text="first")
    result = check(records)
    assert result.doubled == 1


def test_the_commands_refuse_a_database_not_named_for_the_benchmark(db):
    with pytest.raises(CommandError, match="not a benchmark database"):
        call_command("bench_load_seed", "--password", PASSWORD)
