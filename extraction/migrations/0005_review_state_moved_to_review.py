"""The review state of a value now lives in review.ValueReview (review 0003 copied it there)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0004_run_incidents_queue_index"),
        # the copy into review's table comes first, and is undone after these fields are back
        ("review", "0003_value_review"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="extractedvalue", name="extraction__run_id_4868d9_idx"),
        migrations.RemoveField(model_name="extractedvalue", name="review_status"),
        migrations.RemoveField(model_name="extractedvalue", name="reviewed_at"),
        migrations.RemoveField(model_name="extractedvalue", name="reviewed_by"),
        migrations.RemoveField(model_name="extractedvalue", name="reviewed_value"),
        migrations.RemoveField(model_name="extractedvalue", name="version"),
    ]
