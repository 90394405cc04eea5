"""Sign-in throttling (django-axes): too many wrong passwords lock a username at one address for
the cool-off, with a page that says so; the cool-off passing or an admin's reset lets it in again."""

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

WRONG = "not the password"
WRONG_PASSWORD_LINE = '<p class="error">Your username and password didn\'t match. Please try again.</p>'


def sign_in(client, password, username="bob", address="127.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def signed_in_as(client) -> str | None:
    response = client.get(reverse("health:status"))  # admins only: others get the product's 403 page
    return response.context["user"].username if response.status_code in (200, 403, 503) else None


@pytest.fixture(autouse=True)
def limits(settings):
    """The documented defaults, whatever LOGIN_FAILURE_LIMIT / LOGIN_COOLOFF_MINUTES say here."""
    settings.AXES_FAILURE_LIMIT = 5
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def fail_until_locked(client):
    for attempt in range(1, settings.AXES_FAILURE_LIMIT):
        response = sign_in(client, WRONG)
        assert response.status_code == 200, attempt
        assert WRONG_PASSWORD_LINE in response.content.decode()
    return sign_in(client, WRONG)


def test_it_locks_out_after_the_failure_limit_even_with_the_right_password(client, bob, password):
    """Issue #15: 30 wrong passwords in a row all got 200, then the right one signed in."""
    locked = fail_until_locked(client)
    assert locked.status_code == 429

    response = sign_in(client, password)
    body = response.content.decode().replace("\xa0", " ")
    assert response.status_code == 429
    assert "Sign-in locked for 15 minutes" in body
    assert f"locked after {settings.AXES_FAILURE_LIMIT} failed sign-in attempts" in body
    assert '<a class="button" href="/login/">Back to sign in</a>' in body
    assert signed_in_as(client) is None


def test_it_signs_in_again_once_the_cool_off_has_passed(client, bob, password):
    fail_until_locked(client)
    assert sign_in(client, password).status_code == 429
    # The cool-off passing, as PostgreSQL sees it: every recorded failure is older than the wait.
    AccessAttempt.objects.update(
        attempt_time=AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME
    )

    response = sign_in(client, password)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert signed_in_as(client) == "bob"


def test_an_admin_reset_unlocks_at_once(client, bob, password):
    fail_until_locked(client)
    call_command("axes_reset_username", "bob")

    assert sign_in(client, password).status_code == 302
    assert signed_in_as(client) == "bob"


def test_the_lock_holds_one_username_at_one_address_only(client, bob, carol, password):
    fail_until_locked(client)

    assert sign_in(client, password, address="10.0.0.7").status_code == 302  # bob elsewhere
    client.logout()
    assert sign_in(client, password, username="carol").status_code == 302  # carol here
    client.logout()
    assert sign_in(client, password).status_code == 429  # bob here, still locked


def test_a_successful_sign_in_clears_the_count(client, bob, password):
    for _ in range(2):
        for _ in range(settings.AXES_FAILURE_LIMIT - 1):
            assert sign_in(client, WRONG).status_code == 200
        assert sign_in(client, password).status_code == 302
        client.logout()
    assert not AccessAttempt.objects.exists()


def test_the_admin_sign_in_is_throttled_too(client, alice, password):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("admin:login"), {"username": "alice", "password": WRONG})
    assert response.status_code == 429
    response = client.post(reverse("admin:login"), {"username": "alice", "password": password})
    body = response.content.decode().replace("\xa0", " ")
    assert response.status_code == 429 and "Sign-in locked for 15 minutes" in body


def test_failures_during_the_lock_do_not_extend_it(client, bob, password):
    """Issue 31: one wrong attempt every 20 s kept bob locked for ever with a 1-minute cool-off."""
    fail_until_locked(client)
    locked_at = AccessAttempt.objects.get().attempt_time
    # Near the end of the cool-off, someone at the same address tries again (and again).
    AccessAttempt.objects.update(attempt_time=locked_at - settings.AXES_COOLOFF_TIME + timedelta(seconds=30))
    assert sign_in(client, WRONG).status_code == 429
    assert sign_in(client, WRONG).status_code == 429
    # 31 s later the cool-off the lock began with has passed, and bob signs in.
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=31))

    response = sign_in(client, password)
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert signed_in_as(client) == "bob"


ADMIN_WRONG_PASSWORD_LINE = "Please enter the correct username and password for a staff account."


@pytest.mark.parametrize(
    ("url", "wrong_password_line"),
    [("login", WRONG_PASSWORD_LINE), ("admin:login", ADMIN_WRONG_PASSWORD_LINE)],
)
@pytest.mark.django_db
def test_a_user_name_too_long_to_store_is_a_counted_failed_sign_in(client, url, wrong_password_line):
    """Issue 51: a name of 256 characters or more answered 500 to anyone: its failure record did not
    fit the throttle's column."""
    long_name = "x" * 300
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(reverse(url), {"username": long_name, "password": WRONG})
        assert response.status_code == 200
        assert wrong_password_line in response.content.decode()
    assert client.post(reverse(url), {"username": long_name, "password": WRONG}).status_code == 429
    attempt = AccessAttempt.objects.get()
    assert attempt.username == long_name[:255] and attempt.failures_since_start == settings.AXES_FAILURE_LIMIT
