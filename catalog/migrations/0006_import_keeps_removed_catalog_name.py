"""An import job keeps its catalog's name (catalog_name), and may have no catalog: an import that
stored nothing lets go of the empty catalog it was made for and removes it, and its record stays."""

import django.db.models.deletion
from django.db import migrations, models


def fill_catalog_names(apps, schema_editor):
    ImportJob = apps.get_model("catalog", "ImportJob")
    for job in ImportJob.objects.select_related("catalog").iterator():
        ImportJob.objects.filter(pk=job.pk).update(catalog_name=job.catalog.name)


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0005_removed_upload_from_workers"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="catalog_name",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.RunPython(fill_catalog_names, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="importjob",
            name="catalog",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="imports",
                to="catalog.catalog",
            ),
        ),
        migrations.AlterField(
            model_name="importjob",
            name="message",
            field=models.TextField(
                blank=True,
                help_text="Why the import failed, or what else it changed (attribute sizes, a catalog removed).",
            ),
        ),
    ]
