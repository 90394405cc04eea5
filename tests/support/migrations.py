"""Move the test database to chosen migrations, for the tests of data migrations."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(**apps_at: str):
    """Every app at its latest migration except those named (app=migration name); returns the
    historical models as they are there."""
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    targets = [leaf for leaf in leaves if leaf[0] not in apps_at] + list(apps_at.items())
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_latest():
    """Every app back at its latest migration after a test that moved the database back."""
    yield
    migrate()
