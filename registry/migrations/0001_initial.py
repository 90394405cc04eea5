import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("catalog", "0005_removed_upload_from_workers"),
        ("training", "0002_learning_curve_point"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # The tables exist already (training 0001 made them, under these names): the registry takes over
    # the models in Django's state only; the database is not touched.
    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="ModelVersion",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("shipped", "Shipped default"),
                                    ("trained", "Trained on reviewed gold"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("candidate", "Candidate (not promoted)"),
                                    ("promoted", "Promoted"),
                                    ("discarded", "Discarded"),
                                ],
                                default="candidate",
                                max_length=10,
                            ),
                        ),
                        ("archive", models.BinaryField(blank=True, default=b"")),
                        ("sha256", models.CharField(blank=True, max_length=64)),
                        ("size_bytes", models.BigIntegerField(default=0)),
                        ("training_settings", models.JSONField(blank=True, default=dict)),
                        ("data_counts", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "catalog",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="model_versions",
                                to="catalog.catalog",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "parent",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="children",
                                to="registry.modelversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "training_modelversion",
                        "ordering": ["-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="CatalogModel",
                    fields=[
                        (
                            "catalog",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="default_model",
                                serialize=False,
                                to="catalog.catalog",
                            ),
                        ),
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="registry.modelversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "training_catalogmodel",
                    },
                ),
                migrations.CreateModel(
                    name="Promotion",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("automatic", models.BooleanField(default=False)),
                        ("at", models.DateTimeField(auto_now_add=True)),
                        ("undone_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "catalog",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="promotions",
                                to="catalog.catalog",
                            ),
                        ),
                        (
                            "previous",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="registry.modelversion",
                            ),
                        ),
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="promotions",
                                to="registry.modelversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "training_promotion",
                        "ordering": ["-at", "-id"],
                    },
                ),
                migrations.AddConstraint(
                    model_name="modelversion",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("kind", "shipped")),
                        fields=("kind",),
                        name="one_shipped_model_version",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="modelversion",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("kind", "shipped"),
                            models.Q(models.Q(("sha256", ""), _negated=True), ("catalog__isnull", False)),
                            _connector="OR",
                        ),
                        name="trained_version_has_bytes_and_catalog",
                    ),
                ),
            ],
        )
    ]
