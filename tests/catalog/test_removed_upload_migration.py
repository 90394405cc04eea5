"""Migrations catalog 0005 and workers 0002: the record of removed uploads moves from the workers app
to catalog with its rows (issue #32: workers/ holds the Celery app and its tasks only)."""

from datetime import UTC, datetime

import pytest

from catalog.models import RemovedUpload
from tests.support.migrations import back_to_latest, migrate  # noqa: F401 - back_to_latest is a fixture


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_a_record_written_under_the_workers_app_is_read_from_catalog_after_the_move():
    apps = migrate(catalog="0004_import_all_or_nothing", workers="0001_removed_uploads")
    Old = apps.get_model("workers", "RemovedUpload")
    uploaded_at = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
    old = Old.objects.create(
        job_id=41,
        catalog_name="Pantry",
        original_name="spring.csv",
        file_name="imports/spring.csv",
        size_bytes=1234,
        status="mapped",
        uploaded_by="maria",
        uploaded_at=uploaded_at,
    )
    migrate()
    moved = RemovedUpload.objects.get(pk=old.pk)
    assert (moved.job_id, moved.catalog_name, moved.original_name, moved.file_name) == (
        41,
        "Pantry",
        "spring.csv",
        "imports/spring.csv",
    )
    assert (moved.size_bytes, moved.status, moved.uploaded_by, moved.uploaded_at) == (
        1234,
        "mapped",
        "maria",
        uploaded_at,
    )
    assert moved.removed_at == old.removed_at
    # the table keeps counting ids: a new record does not collide with the moved one
    assert (
        RemovedUpload.objects.create(
            job_id=42,
            catalog_name="Pantry",
            original_name="b.csv",
            file_name="imports/b.csv",
            status="uploaded",
            uploaded_at=uploaded_at,
        ).pk
        > old.pk
    )
