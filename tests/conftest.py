"""Shared test personas and real-service helpers.

Personas (as in healthchecks' tests): alice is an admin, bob a reviewer, carol and dave raters.
Everything runs against real PostgreSQL and Redis (make test starts them); browser tests drive
Debian's Chromium through Playwright; worker tests start real Celery worker processes.
"""

import pytest

from tests.support.personas import PASSWORD, make_persona


@pytest.fixture
def alice(db):
    return make_persona("alice", "admin")


@pytest.fixture
def bob(db):
    return make_persona("bob", "reviewer")


@pytest.fixture
def carol(db):
    return make_persona("carol", "rater")


@pytest.fixture
def dave(db):
    return make_persona("dave", "rater")


@pytest.fixture
def password():
    return PASSWORD


@pytest.fixture
def client_for(client):
    """client_for(user) -> the test client, signed in as user."""

    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in
