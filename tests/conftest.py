"""Shared test personas and real-service helpers.

Personas (as in healthchecks' tests): alice is an admin, bob a reviewer, carol and dave raters.
Everything runs against real PostgreSQL and Redis (make test starts them); browser tests drive
Debian's Chromium through Playwright; worker tests start real Celery worker processes.
"""

import pytest
from django.db import connections

from tests.support.personas import PASSWORD, make_persona
from tests.support.test_database import drop_leftover_test_database


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, django_db_modify_db_settings_parallel_suffix, django_db_blocker):
    """pytest-django's hook that runs just before it creates the test database: drop a leftover
    one first (unless --reuse-db asks to keep it), so each run starts from its own migrations."""
    if request.config.getoption("reuse_db") and not request.config.getoption("create_db"):
        return
    with django_db_blocker.unblock():
        drop_leftover_test_database(connections["default"])


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
