"""RemovedUpload moves from the workers app to catalog (issue #32: workers/ holds the Celery app and its
tasks only; the sweep of stranded uploads is catalog's). The table is renamed, so its rows stay; the
workers app forgets the model in workers/0002 without touching the database."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0004_import_all_or_nothing"),
        ("workers", "0001_removed_uploads"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE workers_removedupload RENAME TO catalog_removedupload",
                    reverse_sql="ALTER TABLE catalog_removedupload RENAME TO workers_removedupload",
                ),
            ],
            state_operations=[
                migrations.CreateModel(
                    name="RemovedUpload",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "job_id",
                            models.PositiveIntegerField(
                                help_text="The removed import job's id (the row is gone)."
                            ),
                        ),
                        ("catalog_name", models.CharField(max_length=200)),
                        ("original_name", models.CharField(max_length=255)),
                        (
                            "file_name",
                            models.CharField(
                                help_text="The file's name in MEDIA_ROOT (deleted).", max_length=500
                            ),
                        ),
                        ("size_bytes", models.BigIntegerField(default=0)),
                        (
                            "status",
                            models.CharField(help_text="The step the import was left at.", max_length=10),
                        ),
                        ("uploaded_by", models.CharField(blank=True, max_length=150)),
                        ("uploaded_at", models.DateTimeField()),
                        ("removed_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "ordering": ["-removed_at", "-id"],
                    },
                ),
            ],
        ),
    ]
