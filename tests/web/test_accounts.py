import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_it_sends_anonymous_users_to_login(client):
    response = client.get(reverse("workers:status"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_it_shows_health_of_database_and_redis(client_for, alice):
    response = client_for(alice).get(reverse("workers:status"))
    body = response.content.decode()
    assert "PostgreSQL 16" in body
    assert "Redis 6" in body


def test_it_signs_in_with_password(client, bob, password):
    response = client.post(reverse("login"), {"username": "bob", "password": password})
    assert response.status_code == 302
    response = client.post(reverse("login"), {"username": "bob", "password": "wrong"})
    assert "didn't match" in response.content.decode()
