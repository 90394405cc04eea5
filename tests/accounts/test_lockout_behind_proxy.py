"""Sign-in throttling behind proxies (issue 51): the address counted is the one the outermost
trusted proxy appended to X-Forwarded-For, never an entry the client wrote, and a request without
enough entries counts at the socket's address, never at one empty address shared by all."""

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.urls import reverse

from tests.accounts.test_lockout import WRONG, WRONG_PASSWORD_LINE

PROXY = "10.0.0.2"  # REMOTE_ADDR: the proxy nearest the web server


@pytest.fixture(autouse=True)
def behind_one_proxy(settings):
    settings.TRUSTED_PROXY_COUNT = 1  # BEHIND_PROXY=1 with the default count


def sign_in(client, password, forwarded_for=None, remote_addr=PROXY, username="bob"):
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for is not None else {}
    data = {"username": username, "password": password}
    return client.post(reverse("login"), data, headers=headers, REMOTE_ADDR=remote_addr)


def counted_addresses() -> list[str]:
    return sorted(AccessAttempt.objects.values_list("ip_address", flat=True))


def test_a_guesser_writing_x_forwarded_for_is_counted_at_the_address_the_proxy_appended(
    client, bob, password
):
    """Before: each try with its own "random" left entry got a counter of its own, never locked."""
    for attempt in range(1, settings.AXES_FAILURE_LIMIT):
        response = sign_in(client, WRONG, forwarded_for=f"random-{attempt}, 203.0.113.7")
        assert response.status_code == 200 and WRONG_PASSWORD_LINE in response.content.decode()
    assert sign_in(client, WRONG, forwarded_for="198.51.100.99, 203.0.113.7").status_code == 429
    assert sign_in(client, password, forwarded_for="192.0.2.1, 203.0.113.7").status_code == 429
    assert counted_addresses() == ["203.0.113.7"]
    # bob elsewhere, behind the same proxy, is not locked
    assert sign_in(client, password, forwarded_for="203.0.113.8").status_code == 302


def test_a_single_entry_is_the_address_the_proxy_appended(client, bob, password):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = sign_in(client, WRONG, forwarded_for="203.0.113.9")
    assert response.status_code == 429
    assert counted_addresses() == ["203.0.113.9"]


def test_clients_without_the_header_do_not_share_one_lock(client, bob, password):
    """Before: every request without the header counted at no address, so five wrong passwords
    from anyone locked bob out for everyone."""
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = sign_in(client, WRONG, remote_addr="192.0.2.10")
    assert response.status_code == 429
    assert counted_addresses() == ["192.0.2.10"]
    assert sign_in(client, password, remote_addr="192.0.2.11").status_code == 302


def test_too_few_entries_or_no_address_count_at_the_socket_address(client, bob, settings):
    settings.TRUSTED_PROXY_COUNT = 2
    sign_in(client, WRONG, forwarded_for="203.0.113.9", remote_addr="192.0.2.20")
    # Two proxies: the outer one appended the client's address, the inner one the outer's.
    sign_in(client, WRONG, forwarded_for="random, 203.0.113.7, 10.0.0.3")
    settings.TRUSTED_PROXY_COUNT = 1
    sign_in(client, WRONG, forwarded_for="203.0.113.7, unknown", remote_addr="192.0.2.21")
    sign_in(client, WRONG, forwarded_for="", remote_addr="192.0.2.22")
    assert counted_addresses() == ["192.0.2.20", "192.0.2.21", "192.0.2.22", "203.0.113.7"]
