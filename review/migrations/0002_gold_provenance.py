"""Gold records how it was made (issue 14): typed blind, a correction or an acceptance of a named
run's value, or the catalog's own value. Existing rows get the provenance their review events imply."""

import django.db.models.deletion
from django.db import migrations, models

BATCH = 2000


def provenance_from_events(apps, schema_editor):
    GoldValue = apps.get_model("review", "GoldValue")
    ValueEvent = apps.get_model("review", "ValueEvent")
    changed = []
    for gold in GoldValue.objects.select_related("source", "product").iterator(chunk_size=BATCH):
        if gold.source is not None:
            # The newest event of the source value set its present state: accepted or corrected.
            last = ValueEvent.objects.filter(value_id=gold.source_id).order_by("-at", "-id").first()
            status = (
                last.new_status if last else ("accepted" if gold.value == gold.source.value else "corrected")
            )
            gold.provenance = "corrected" if status == "corrected" else "accepted"
            gold.from_run_id = gold.source.run_id
        elif str(gold.product.known_values.get(gold.attribute_name, "")) == gold.value:
            gold.provenance, gold.from_run_id = "catalog", None
        else:
            # Approved from a value whose run was deleted since: no run left that it could flatter.
            gold.provenance, gold.from_run_id = "accepted", None
        changed.append(gold)
        if len(changed) >= BATCH:
            GoldValue.objects.bulk_update(changed, ["provenance", "from_run"])
            changed = []
    GoldValue.objects.bulk_update(changed, ["provenance", "from_run"])


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0003_model_load_failures"),
        ("review", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="goldvalue",
            name="provenance",
            field=models.CharField(
                choices=[
                    ("blind", "Typed blind"),
                    ("corrected", "Correction of a run's value"),
                    ("accepted", "Acceptance of a run's value"),
                    ("catalog", "Catalog's known value"),
                ],
                default="catalog",
                max_length=10,
            ),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="goldvalue",
            name="from_run",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="supplied_gold",
                to="extraction.run",
            ),
        ),
        migrations.RunPython(provenance_from_events, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="goldvalue",
            constraint=models.CheckConstraint(
                condition=models.Q(("provenance__in", ["accepted", "corrected"]))
                | models.Q(("from_run__isnull", True), ("provenance__in", ["blind", "catalog"])),
                name="gold_provenance_known_and_runless_when_blind_or_catalog",
            ),
        ),
    ]
