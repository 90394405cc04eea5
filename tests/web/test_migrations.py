"""The migrations say what the models say: a model change without its migration (or a move between
apps whose state migration was forgotten, as the registry's from training) fails here, not on a
user's `migrate`."""

import io

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_the_models_need_no_migration_that_is_not_written():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"models and migrations differ (exit {exc.code}):\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()


def test_the_registry_took_over_the_training_tables_without_touching_them():
    """The moved models keep their tables: an installation that trained versions before the move
    keeps them (the state-only migrations write no SQL)."""
    from registry.models import CatalogModel, ModelVersion, Promotion

    assert [m._meta.db_table for m in (ModelVersion, CatalogModel, Promotion)] == [
        "training_modelversion",
        "training_catalogmodel",
        "training_promotion",
    ]
    for app, name in (("registry", "0001_initial"), ("training", "0003_versions_moved_to_registry")):
        sql = io.StringIO()
        call_command("sqlmigrate", app, name, stdout=sql)
        statements = [line for line in sql.getvalue().splitlines() if line and not line.startswith("--")]
        assert statements in ([], ["BEGIN;", "COMMIT;"]), (app, name, statements)
