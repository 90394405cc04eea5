"""Reviewer settings: changeable keyboard shortcuts (validated) and a GPU price."""

import pytest
from django.urls import reverse

from review import shortcuts
from review.models import ReviewerSettings
from tests.support.factories import make_scenario

pytestmark = pytest.mark.django_db


def form(**changes):
    data = {f"key_{a}": k for a, k in shortcuts.defaults().items()}
    data.update({f"key_{a}": k for a, k in changes.items()})
    return data


def test_it_saves_changed_shortcuts_and_the_queue_uses_them(client_for, bob):
    make_scenario(products=1)
    client = client_for(bob)
    response = client.post(reverse("review:settings"), form(accept="y", next="ArrowDown"))
    assert response.status_code == 302
    assert ReviewerSettings.objects.get(user=bob).shortcuts == {"accept": "y", "next": "ArrowDown"}
    body = client.get(reverse("review:queue")).content.decode()
    assert '"accept": "y"' in body and '"next": "ArrowDown"' in body
    assert '<kbd data-action="accept">y</kbd>' in body


def test_it_refuses_duplicate_reserved_and_unknown_keys_and_saves_nothing(client_for, bob):
    response = client_for(bob).post(reverse("review:settings"), form(accept="r", edit="Enter", na="Banana"))
    assert response.status_code == 400
    body = response.content.decode()
    assert "is already the key of Accept" in body
    assert "needed by the edit box" in body
    assert "&#x27;Banana&#x27; is not a key" in body
    assert not ReviewerSettings.objects.filter(user=bob).exists()


def test_it_saves_a_gpu_price_and_refuses_a_bad_one(client_for, bob):
    client = client_for(bob)
    assert client.post(reverse("review:settings"), {**form(), "gpu_price_per_hour": "abc"}).status_code == 400
    client.post(reverse("review:settings"), {**form(), "gpu_price_per_hour": "3.2"})
    assert str(ReviewerSettings.objects.get(user=bob).gpu_price_per_hour) == "3.20"


def test_it_never_redirects_off_site(client_for, bob):
    response = client_for(bob).post(reverse("review:settings"), {**form(), "next": "https://evil.example/"})
    assert response["Location"] == reverse("review:settings")
