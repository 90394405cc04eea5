"""Which model versions a catalog has, which is its default, and the admin's decisions on them.

The shipped default counts as a version (one row, no bytes: every worker has it from `make model`).
Promotion makes a version the catalog's default and can be undone (the previous default comes
back); a discarded version is no longer offered. Each `do_*` function is one transaction.
"""

from django.db import transaction
from django.utils import timezone

from catalog.models import Catalog
from registry.models import CatalogModel, ModelVersion, Promotion

SHIPPED_NAME = "Shipped default"


class DecisionRefused(ValueError):
    """The promotion, undo or discard cannot be done as asked; the message says why. Nothing changed."""


def shipped_version(create: bool = True) -> ModelVersion:
    """The shipped default's row, made the first time a write needs it (a run, a job, a promotion).
    create=False (pages, which never write on a GET): the row if made, else an unsaved stand-in."""
    defaults = {"name": SHIPPED_NAME, "status": ModelVersion.Status.PROMOTED}
    if not create:
        found = ModelVersion.objects.defer("archive").filter(kind=ModelVersion.Kind.SHIPPED).first()
        return found or ModelVersion(kind=ModelVersion.Kind.SHIPPED, **defaults)
    version, _ = ModelVersion.objects.get_or_create(kind=ModelVersion.Kind.SHIPPED, defaults=defaults)
    return version


def default_version(catalog: Catalog, create: bool = True) -> ModelVersion:
    """The version the catalog's runs decode with unless another is chosen (create: shipped_version's)."""
    row = (
        CatalogModel.objects.filter(catalog=catalog)
        .select_related("version")
        .defer("version__archive")
        .first()
    )
    return row.version if row is not None else shipped_version(create)


def offered_versions(catalog: Catalog | None = None):
    """Versions a run may use: the shipped one and the catalog's (every catalog's without one)
    trained versions not discarded; never their bytes (the web process does not need them)."""
    trained = ModelVersion.objects.filter(kind=ModelVersion.Kind.TRAINED).exclude(
        status=ModelVersion.Status.DISCARDED
    )
    if catalog is not None:
        trained = trained.filter(catalog=catalog)
    return [
        shipped_version(create=False),  # the run form's GET writes nothing
        *trained.defer("archive").select_related("catalog").order_by("catalog__name", "id"),
    ]


def do_promote(version: ModelVersion, user=None, automatic: bool = False) -> Promotion:
    """Make `version` its catalog's default; the previous default is recorded for undo."""
    if version.is_shipped or version.catalog_id is None:
        raise DecisionRefused("Only a version trained on a catalog can be promoted to its default.")
    with transaction.atomic():
        locked = ModelVersion.objects.select_for_update().defer("archive").get(pk=version.pk)
        if locked.status == ModelVersion.Status.DISCARDED:
            raise DecisionRefused(f"{locked} was discarded; train a new version instead.")
        previous = default_version(locked.catalog)
        if previous.pk == locked.pk:
            raise DecisionRefused(f"{locked} is already the default of {locked.catalog}.")
        CatalogModel.objects.update_or_create(catalog=locked.catalog, defaults={"version": locked})
        ModelVersion.objects.filter(pk=locked.pk).update(status=ModelVersion.Status.PROMOTED)
        return Promotion.objects.create(
            catalog=locked.catalog, version=locked, previous=previous, automatic=automatic, by=user
        )


def do_undo_promotion(catalog: Catalog, user=None) -> Promotion:
    """Take back the catalog's newest promotion still standing: its previous default is the
    default again (the promoted version stays offered, as a candidate)."""
    with transaction.atomic():
        promotion = (
            Promotion.objects.select_for_update()
            .filter(catalog=catalog, undone_at__isnull=True)
            .select_related("previous", "version")
            .defer("previous__archive", "version__archive")
            .first()
        )
        if promotion is None:
            raise DecisionRefused(f"{catalog} has no promotion to undo.")
        if promotion.previous.is_shipped:
            CatalogModel.objects.filter(catalog=catalog).delete()
        else:
            CatalogModel.objects.update_or_create(catalog=catalog, defaults={"version": promotion.previous})
        ModelVersion.objects.filter(pk=promotion.version_id).update(status=ModelVersion.Status.CANDIDATE)
        promotion.undone_at = timezone.now()
        promotion.save(update_fields=["undone_at"])
        return promotion


def do_discard(version: ModelVersion) -> None:
    """No longer offer a candidate (its bytes stay, so runs that used it still say which it was)."""
    with transaction.atomic():
        locked = ModelVersion.objects.select_for_update().defer("archive").get(pk=version.pk)
        if locked.is_shipped:
            raise DecisionRefused("The shipped default cannot be discarded.")
        if CatalogModel.objects.filter(version=locked).exists():
            raise DecisionRefused(f"{locked} is the default of {locked.catalog}: undo its promotion first.")
        ModelVersion.objects.filter(pk=locked.pk).update(status=ModelVersion.Status.DISCARDED)
