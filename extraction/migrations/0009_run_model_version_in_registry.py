import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0008_run_model_version"),
        ("registry", "0001_initial"),
    ]

    # The same table under its new owner (registry): state only, the foreign key in the database stands.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="run",
                    name="model_version",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="runs",
                        to="registry.modelversion",
                    ),
                ),
            ],
        )
    ]
