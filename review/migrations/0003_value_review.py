"""Review owns its state: each value's status, reviewed value, reviewer and version move from
extraction's ExtractedValue into ValueReview, one row per value (extraction 0005 then drops the old
columns). One INSERT ... SELECT forwards and one UPDATE ... FROM backwards, so a catalog of
millions of values moves in a statement each way rather than row by row in Python."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

COPY_FORWARDS = """
INSERT INTO review_valuereview
    (value_id, run_id, confidence, status, reviewed_value, reviewed_by_id, reviewed_at, version)
SELECT id, run_id, confidence, review_status, reviewed_value, reviewed_by_id, reviewed_at, version
FROM extraction_extractedvalue
"""

# Runs after extraction 0005 was undone, so the old columns are back (with their defaults).
COPY_BACKWARDS = """
UPDATE extraction_extractedvalue AS v
SET review_status = r.status, reviewed_value = r.reviewed_value, reviewed_by_id = r.reviewed_by_id,
    reviewed_at = r.reviewed_at, version = r.version
FROM review_valuereview AS r
WHERE r.value_id = v.id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0004_run_incidents_queue_index"),
        ("review", "0002_gold_provenance"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ValueReview",
            fields=[
                (
                    "value",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="review",
                        serialize=False,
                        to="extraction.extractedvalue",
                    ),
                ),
                ("confidence", models.FloatField()),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("pending", "Pending"),
                            ("accepted", "Accepted"),
                            ("corrected", "Corrected"),
                            ("rejected", "Rejected"),
                        ],
                        default="pending",
                        max_length=10,
                    ),
                ),
                ("reviewed_value", models.TextField(blank=True)),
                ("reviewed_at", models.DateTimeField(blank=True, null=True)),
                ("version", models.PositiveIntegerField(default=0)),
                (
                    "reviewed_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="extraction.run",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["run", "status", "confidence", "value"], name="review_queue_by_status"
                    ),
                    models.Index(fields=["run", "confidence", "value"], name="review_queue_order"),
                ],
            },
        ),
        migrations.RunSQL(COPY_FORWARDS, COPY_BACKWARDS),
    ]
