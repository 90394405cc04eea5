"""ValueReview.cut: a copy of the value's `truncated`, so the queue lists values cut by the token
budget first from one index (the indexes gain it after the run)."""

from django.db import migrations, models

COPY = """
UPDATE review_valuereview AS r SET cut = v.truncated
FROM extraction_extractedvalue AS v WHERE v.id = r.value_id AND v.truncated
"""


class Migration(migrations.Migration):
    dependencies = [
        ("review", "0004_bulk_approvals_are_not_gold"),
        ("extraction", "0005_review_state_moved_to_review"),
    ]

    operations = [
        migrations.AddField(model_name="valuereview", name="cut", field=models.BooleanField(default=False)),
        migrations.RunSQL(COPY, migrations.RunSQL.noop),
        migrations.RemoveIndex(model_name="valuereview", name="review_queue_by_status"),
        migrations.RemoveIndex(model_name="valuereview", name="review_queue_order"),
        migrations.AddIndex(
            model_name="valuereview",
            index=models.Index(
                fields=["run", "status", "-cut", "confidence", "value"], name="review_queue_cut_by_status"
            ),
        ),
        migrations.AddIndex(
            model_name="valuereview",
            index=models.Index(fields=["run", "-cut", "confidence", "value"], name="review_queue_cut_order"),
        ),
    ]
