"""Signing in: anonymous visitors are sent to the sign-in page; a password signs in, a wrong one
says so. Throttling is in test_lockout.py."""

import pytest
from django.urls import reverse

WRONG_PASSWORD_MESSAGE = "Your username and password didn't match. Please try again."


@pytest.mark.django_db
def test_it_sends_anonymous_users_to_login(client):
    response = client.get(reverse("health:status"))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={reverse('health:status')}"


def test_it_signs_in_with_password(client, bob, password):
    response = client.post(reverse("login"), {"username": "bob", "password": password})
    assert response.status_code == 302
    assert response["Location"] == reverse("home")
    client.logout()
    response = client.post(reverse("login"), {"username": "bob", "password": "wrong"})
    assert response.status_code == 200
    assert f'<p class="error">{WRONG_PASSWORD_MESSAGE}</p>' in response.content.decode()
    assert not response.context["user"].is_authenticated
