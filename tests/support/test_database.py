"""The test database, dropped before each run even when a killed run left it behind."""

from django.db.backends.base.base import BaseDatabaseWrapper


def drop_leftover_test_database(connection: BaseDatabaseWrapper) -> str:
    """DROP ... WITH (FORCE): a killed run leaves its database behind with connections still open
    (its Celery workers outlive it), which a plain DROP, and so pytest-django's own clobbering,
    cannot remove: every test then failed at set-up. Returns the database's name."""
    name = connection.creation._get_test_db_name()
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)} WITH (FORCE)")
    return name
