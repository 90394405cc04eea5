"""Catalogs, categories with versioned attribute schemas, and products."""

from django.conf import settings
from django.db import models

from catalog import kinds
from catalog.imports.read import FileFormat
from catalog.kinds import DEFAULT_TOKEN_BUDGET


class Catalog(models.Model):
    """A named collection of products a team uploads (one shop, one supplier feed, ...)."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Category(models.Model):
    """A product type (TV, Shoes, Coffee) whose attributes are defined by its schema versions."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "categories"

    def __str__(self):
        return self.name

    @property
    def current_schema(self) -> "SchemaVersion | None":
        return self.schema_versions.order_by("-version").first()


class SchemaVersion(models.Model):
    """One immutable version of a category's attribute list; editing makes the next version."""

    category = models.ForeignKey(Category, related_name="schema_versions", on_delete=models.CASCADE)
    version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["category__name", "-version"]
        constraints = [models.UniqueConstraint(fields=["category", "version"], name="unique_schema_version")]

    def __str__(self):
        return f"{self.category.name} v{self.version}"


class Attribute(models.Model):
    """An attribute of a schema version: what the model fills in for each product."""

    class Kind(models.TextChoices):
        # the kinds themselves are the engine's too: catalog/kinds.py
        TEXT = kinds.TEXT, "Text"
        NUMBER = kinds.NUMBER, "Number with unit"
        ENUM = kinds.ENUM, "Enumeration"
        BOOLEAN = kinds.BOOLEAN, "Boolean"

        def decoding(self, unit: str = "", free: bool = False) -> str:
            """What this type makes the decoder do, in one sentence: the schema editor shows it,
            so that whoever picks a type knows what the engine's slot constraint will allow."""
            kind = type(self)
            if self == kind.NUMBER:
                target = f"converted to {unit}" if unit else "in the unit it is written with"
                return f"A number with a unit, {target}, or n/a."
            if self == kind.ENUM:
                return "One of the allowed values, or n/a."
            if self == kind.BOOLEAN:
                return "Yes / no / n/a."
            if free:
                return "Written by the model (a normalized value, not necessarily in the text), or n/a."
            return "Copied from the product text, or n/a."

        @classmethod
        def decodings(cls) -> list[tuple[str, str]]:
            """(type, sentence) for every type, for a form where no type is chosen yet."""
            return [
                ("Text", cls.TEXT.decoding()),
                ("Text, free", cls.TEXT.decoding(free=True)),
                (cls.NUMBER.label, cls.NUMBER.decoding(unit="the attribute's unit")),
                (cls.ENUM.label, cls.ENUM.decoding()),
                (cls.BOOLEAN.label, cls.BOOLEAN.decoding()),
            ]

    schema = models.ForeignKey(SchemaVersion, related_name="attributes", on_delete=models.CASCADE)
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=100)
    description = models.CharField(max_length=500, blank=True, help_text="Goes into the prompt.")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.TEXT)
    unit = models.CharField(max_length=30, blank=True)
    allowed_values = models.JSONField(default=list, blank=True)
    max_tokens = models.PositiveSmallIntegerField(
        default=DEFAULT_TOKEN_BUDGET, help_text="Token budget: the value's slot width."
    )
    required = models.BooleanField(default=False)
    # Text only: a free value is written by the model (say, normalized as a catalog spells it);
    # an extractive one (the default) is copied from the product text.
    free = models.BooleanField(
        default=False, help_text="Text only: the model may write a value that is not in the product text."
    )

    class Meta:
        ordering = ["schema", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["schema", "name"], name="unique_attribute_name_per_schema")
        ]

    def __str__(self):
        return self.name

    @property
    def is_extractive(self) -> bool:
        """Its values are copied from the product text (so a value not found there is suspect)."""
        return self.kind == self.Kind.TEXT and not self.free


class Product(models.Model):
    """One listing. Re-importing the same SKU into the same catalog updates this row."""

    catalog = models.ForeignKey(Catalog, related_name="products", on_delete=models.CASCADE)
    sku = models.CharField(max_length=100)
    title = models.CharField(max_length=1000)
    description = models.TextField(blank=True)
    category = models.ForeignKey(Category, related_name="products", on_delete=models.PROTECT)
    known_values = models.JSONField(
        default=dict, blank=True, help_text="Attribute values the catalog already had."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["catalog", "sku"]
        constraints = [models.UniqueConstraint(fields=["catalog", "sku"], name="unique_sku_per_catalog")]
        indexes = [models.Index(fields=["category", "catalog"])]

    def __str__(self):
        return f"{self.sku}: {self.title[:60]}"

    @property
    def document(self) -> str:
        """The text the model reads: the title, then the description when there is one."""
        return f"{self.title}\n{self.description}".strip() if self.description else self.title


class ImportJob(models.Model):
    """One CSV upload on its way through mapping, preview and the background import.

    The uploaded file is stored in PostgreSQL (the default storage, filestore/) until it is imported,
    so the preview on the web host and the import task on any worker read the same bytes; the
    summary counts are written in the same transaction as the products.
    """

    class Status(models.TextChoices):
        UPLOADED = "uploaded", "Uploaded"
        MAPPED = "mapped", "Mapped"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    # None once an import that stored nothing removed the empty catalog it was made for: it lets go
    # of the catalog first, so the cascade that removes a catalog's imports passes it by
    # (catalog.imports.run); catalog_name still names it.
    catalog = models.ForeignKey(
        Catalog, related_name="imports", null=True, blank=True, on_delete=models.CASCADE
    )
    catalog_name = models.CharField(max_length=200, blank=True)
    file = models.FileField(upload_to="imports/")
    original_name = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField(default=0)
    encoding = models.CharField(max_length=20)
    delimiter = models.CharField(max_length=1)
    header = models.JSONField(default=list)
    mapping = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.UPLOADED)
    total_rows = models.PositiveIntegerField(default=0)
    processed_rows = models.PositiveIntegerField(default=0)
    created_count = models.PositiveIntegerField(default=0)
    updated_count = models.PositiveIntegerField(default=0)
    skipped_count = models.PositiveIntegerField(default=0)
    message = models.TextField(
        blank=True,
        help_text="Why the import failed, or what else it changed (attribute sizes, a catalog removed).",
    )
    all_or_nothing = models.BooleanField(
        default=False, help_text="Store no row at all when any row is bad (chosen at confirm)."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Import {self.pk} of {self.original_name}"

    @property
    def is_finished(self) -> bool:
        return self.status in {self.Status.DONE, self.Status.FAILED}

    @property
    def catalog_label(self) -> str:
        """The catalog's name, also after an import that stored nothing removed it."""
        return self.catalog.name if self.catalog_id else f"{self.catalog_name} (removed: it held nothing)"

    @property
    def stored_count(self) -> int:
        return self.created_count + self.updated_count

    def open_file(self):
        """The stored upload as a binary stream read a chunk at a time (a new one each call)."""
        return self.file.storage.open(self.file.name, "rb")

    @property
    def file_format(self) -> FileFormat:
        """How its file was read at upload, so the preview and the worker read it the same way."""
        return FileFormat(encoding=self.encoding, delimiter=self.delimiter, header=self.header)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(99, int(100 * self.processed_rows / self.total_rows)) if self.total_rows else 0


class ImportRowError(models.Model):
    """A row the import skipped, and why: the lines of the downloadable error report."""

    job = models.ForeignKey(ImportJob, related_name="row_errors", on_delete=models.CASCADE)
    row_number = models.PositiveIntegerField(help_text="Line of the data row in the file (header is 1).")
    sku = models.CharField(max_length=200, blank=True)
    column = models.CharField(max_length=200, blank=True)
    reason = models.CharField(max_length=500)
    cells = models.JSONField(default=list, help_text="The row as it was in the file.")

    class Meta:
        ordering = ["job", "row_number", "id"]


# What the periodic sweep of stranded uploads removed (catalog/stranded_uploads.py), so an admin can see
# where an upload went. Moved from the workers app (issue #32): its table was renamed, its rows kept.
class RemovedUpload(models.Model):
    """An import job left at upload or mapping longer than the limit, removed with its file."""

    job_id = models.PositiveIntegerField(help_text="The removed import job's id (the row is gone).")
    catalog_name = models.CharField(max_length=200)
    original_name = models.CharField(max_length=255)
    file_name = models.CharField(max_length=500, help_text="The file's name in MEDIA_ROOT (deleted).")
    size_bytes = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, help_text="The step the import was left at.")
    uploaded_by = models.CharField(max_length=150, blank=True)
    uploaded_at = models.DateTimeField()
    removed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-removed_at", "-id"]

    def __str__(self):
        return f"{self.original_name} (import {self.job_id}, removed {self.removed_at:%Y-%m-%d %H:%M})"
