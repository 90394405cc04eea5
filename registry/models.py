"""The model registry: every model version a run may decode with, and each catalog's default.

Nothing here lives on a shared disk: a trained adapter's files are one archive (bytes) in its
ModelVersion row, fingerprinted by the sha256 of those bytes, and any worker on any machine unpacks
it into a local cache keyed by that fingerprint (registry/cache.py). The registry sits below the
run (extraction) and the training job (training): both name versions, neither owns them. The
tables keep the names they had when training/ held these models (db_table). Never imports torch.
"""

from django.conf import settings
from django.db import models

from catalog.models import Catalog


class ModelVersion(models.Model):
    """One model a run may decode with: the shipped default (no bytes: every worker has it from
    `make model`) or an adapter trained on a catalog's reviewed gold (its archive here)."""

    class Kind(models.TextChoices):
        SHIPPED = "shipped", "Shipped default"
        TRAINED = "trained", "Trained on reviewed gold"

    class Status(models.TextChoices):
        CANDIDATE = "candidate", "Candidate (not promoted)"
        PROMOTED = "promoted", "Promoted"
        DISCARDED = "discarded", "Discarded"

    kind = models.CharField(max_length=10, choices=Kind.choices)
    name = models.CharField(max_length=200)
    catalog = models.ForeignKey(
        Catalog, null=True, blank=True, related_name="model_versions", on_delete=models.CASCADE
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, related_name="children", on_delete=models.SET_NULL
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    # The adapter directory as one deterministic tar archive (registry/archive.py), and its sha256:
    # the version's fingerprint, the key of every worker's local cache.
    archive = models.BinaryField(blank=True, default=b"")
    sha256 = models.CharField(max_length=64, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    # How it was trained (minutes, steps, learning rate, seed ...) and on what: reviewed gold by
    # provenance, held-back products, public products per reviewed product.
    training_settings = models.JSONField(default=dict, blank=True)
    data_counts = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "training_modelversion"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind"], condition=models.Q(kind="shipped"), name="one_shipped_model_version"
            ),
            models.CheckConstraint(
                condition=models.Q(kind="shipped") | (~models.Q(sha256="") & models.Q(catalog__isnull=False)),
                name="trained_version_has_bytes_and_catalog",
            ),
        ]

    def __str__(self):
        return self.name

    @property
    def is_shipped(self) -> bool:
        return self.kind == self.Kind.SHIPPED

    @property
    def label(self) -> str:
        """How menus and tables name it: with its catalog, unless its name already starts with it (a
        training job names its version after the catalog)."""
        if self.catalog is None or self.name.startswith(self.catalog.name):
            return self.name
        return f"{self.catalog.name}: {self.name}"


class CatalogModel(models.Model):
    """The version a catalog's runs decode with by default (no row: the shipped default)."""

    catalog = models.OneToOneField(
        Catalog, primary_key=True, related_name="default_model", on_delete=models.CASCADE
    )
    version = models.ForeignKey(ModelVersion, related_name="+", on_delete=models.PROTECT)

    class Meta:
        db_table = "training_catalogmodel"


class Promotion(models.Model):
    """One change of a catalog's default version; undoing it puts `previous` back."""

    catalog = models.ForeignKey(Catalog, related_name="promotions", on_delete=models.CASCADE)
    version = models.ForeignKey(ModelVersion, related_name="promotions", on_delete=models.CASCADE)
    previous = models.ForeignKey(ModelVersion, related_name="+", on_delete=models.PROTECT)
    automatic = models.BooleanField(default=False)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "training_promotion"
        ordering = ["-at", "-id"]
