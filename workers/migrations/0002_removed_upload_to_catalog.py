"""RemovedUpload now lives in catalog (catalog/0005 renamed its table, rows kept): the workers app
forgets the model without touching the database."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("workers", "0001_removed_uploads"),
        ("catalog", "0005_removed_upload_from_workers"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[migrations.DeleteModel(name="RemovedUpload")],
        ),
    ]
