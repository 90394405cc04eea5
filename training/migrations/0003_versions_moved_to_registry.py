import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0009_run_model_version_in_registry"),
        ("registry", "0001_initial"),
        ("training", "0002_learning_curve_point"),
    ]

    # ModelVersion, CatalogModel and Promotion now belong to the registry app (same tables): training
    # forgets them in Django's state only; the database is not touched.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="modelversion",
                    name="catalog",
                ),
                migrations.RemoveField(
                    model_name="modelversion",
                    name="created_by",
                ),
                migrations.RemoveField(
                    model_name="modelversion",
                    name="parent",
                ),
                migrations.RemoveField(
                    model_name="promotion",
                    name="version",
                ),
                migrations.AlterField(
                    model_name="trainingjob",
                    name="result",
                    field=models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="made_by_job",
                        to="registry.modelversion",
                    ),
                ),
                migrations.RemoveField(
                    model_name="promotion",
                    name="previous",
                ),
                migrations.AlterField(
                    model_name="trainingjob",
                    name="parent",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="training_jobs",
                        to="registry.modelversion",
                    ),
                ),
                migrations.RemoveField(
                    model_name="promotion",
                    name="by",
                ),
                migrations.RemoveField(
                    model_name="promotion",
                    name="catalog",
                ),
                migrations.DeleteModel(
                    name="CatalogModel",
                ),
                migrations.DeleteModel(
                    name="ModelVersion",
                ),
                migrations.DeleteModel(
                    name="Promotion",
                ),
            ],
        )
    ]
