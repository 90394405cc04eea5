"""Extraction runs, their leased work items, and the values they produced.

PostgreSQL is the source of truth for work state: Redis only carries the messages that wake
workers up, so a lost message or a dead worker delays work but never loses or doubles it.
This module must never import torch or the engine's decoders (the web process imports it).
"""

from django.conf import settings
from django.db import models
from django.db.models import Prefetch

from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion

# Each engine decoder a run may decode with, in the words the run page and the dashboard show, so a
# reader knows which AR a speed or a cost is of (#49).
ENGINE_DECODER_WORDS = {
    "hpd": "HPD: the values of every attribute decoded in parallel",
    "ar-honest": "AR-JSON at its honest best: prefix cache, output layer only on the rows its constraint allows",
    "ar": "AR-JSON as the paper runs it: HF generate, the whole output layer every token",
}


class Run(models.Model):
    class Decoder(models.TextChoices):
        HPD = "hpd", "HPD (hyper-parallel)"
        AR = "ar", "AR (autoregressive JSON, honest best)"

    # The engine decoder each kind of run decodes with: the one place a run's decoder becomes the
    # engine's (runner/loop.py and bench_run pass it on). AR runs decode with `ar-honest`, AR-JSON at
    # its honest best, not the paper's `ar` (HF generate): the two write the same values (tests/engine/
    # test_ar_honest.py), so the blind A/B compares the same outputs, while speed and the cost per
    # 1,000 products compare HPD with AR given every speed-up that applies to it too (HPD.md, honest
    # baselines; #49). The stored decoder stays "ar", so existing runs keep theirs; the worker records
    # the engine decoder it used in decode_settings["engine_decoder"].
    ENGINE_DECODERS = {Decoder.HPD: "hpd", Decoder.AR: "ar-honest"}

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Phase(models.TextChoices):
        LOADING = "loading", "Loading the model"
        DECODING = "decoding", "Decoding"
        WRITING = "writing", "Writing values"

    # a run whose work may still be leased and decoded (the one definition)
    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    name = models.CharField(max_length=200, blank=True)
    decoder = models.CharField(max_length=10, choices=Decoder.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    # The selection the run was started with (kept for display; the work items are the truth).
    catalog = models.ForeignKey(Catalog, null=True, blank=True, on_delete=models.SET_NULL)
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL)
    search = models.CharField(max_length=200, blank=True)
    schema_versions = models.ManyToManyField(SchemaVersion, blank=True, related_name="runs")
    model_dir = models.CharField(max_length=500)
    # The stored model version it decodes with (registry/models.py): the shipped default or a
    # version trained on reviewed gold (model_dir "version:<id>"); none for a model directory.
    model_version = models.ForeignKey(
        "registry.ModelVersion", null=True, blank=True, related_name="runs", on_delete=models.SET_NULL
    )
    model_name = models.CharField(max_length=200, blank=True)
    model_revision = models.CharField(max_length=100, blank=True)
    # The identity of the model the run decodes with (extraction/engine/fingerprint.py), set by the
    # first worker that decodes it; a worker whose copy has another one leaves the run to others.
    model_fingerprint = models.CharField(max_length=64, blank=True)
    decode_settings = models.JSONField(
        default=dict, blank=True, help_text="Decoding settings (stacking, batch, device)."
    )
    linked_run = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="linked_from",
        help_text="The AR (or HPD) run over the same products, for comparison.",
    )
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    forward_steps = models.BigIntegerField(default=0)
    tokens_decoded = models.BigIntegerField(default=0)
    engine_seconds = models.FloatField(default=0.0)
    error = models.TextField(blank=True, help_text="Why the run stopped, when it did not finish.")
    # What a worker is doing with the run now (Phase), and since when: the run pages say it in words.
    phase = models.CharField(max_length=10, blank=True)
    phase_since = models.DateTimeField(null=True, blank=True)
    # When a wake-up message was last sent; the reaper uses it so a stalled run is kicked, not spammed.
    last_kick_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name or f"Run {self.pk} ({self.decoder})"

    @property
    def is_active(self) -> bool:
        """Its work may still be leased and decoded (pages and workers ask this, never the states)."""
        return self.status in self.ACTIVE_STATUSES

    @property
    def engine_decoder(self) -> str:
        """The engine decoder a worker decodes this run with (ENGINE_DECODERS)."""
        return self.ENGINE_DECODERS[self.decoder]

    @property
    def engine_decoder_used(self) -> str:
        """The engine decoder the run decoded with: what its worker recorded; a run a worker started
        before workers recorded it (a device, no engine decoder) decoded with its own name, the
        paper's `ar` for AR; a run no worker has started yet, with the one it will get."""
        recorded = self.decode_settings.get("engine_decoder")
        if recorded:
            return recorded
        return self.decoder if self.decode_settings.get("device") else self.engine_decoder

    @property
    def engine_decoder_words(self) -> str:
        return ENGINE_DECODER_WORDS.get(self.engine_decoder_used, self.engine_decoder_used)


class WorkItem(models.Model):
    """One product of a run. Workers lease items; an expired lease makes the item takeable again."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        LEASED = "leased", "Leased"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    @classmethod
    def takeable(cls, now) -> models.Q:
        """Items a worker may lease now: queued, or leased by a worker whose lease has expired."""
        return models.Q(status=cls.Status.QUEUED) | cls.lease_expired(now)

    @classmethod
    def lease_expired(cls, now) -> models.Q:
        """Leased by a worker that did not renew in time (it died or hung): takeable again."""
        return models.Q(status=cls.Status.LEASED, lease_expires_at__lt=now)

    @classmethod
    def lease_live(cls, now) -> models.Q:
        """Leased by a worker that is still renewing: nobody else may take the item."""
        return models.Q(status=cls.Status.LEASED, lease_expires_at__gte=now)

    run = models.ForeignKey(Run, related_name="work_items", on_delete=models.CASCADE)
    product = models.ForeignKey(Product, related_name="work_items", on_delete=models.CASCADE)
    schema = models.ForeignKey(SchemaVersion, on_delete=models.PROTECT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # How many times results were written for this item (1 when done): the proof that no product
    # was done twice, and the worker that wrote them.
    writes = models.PositiveSmallIntegerField(default=0)
    done_by = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "product"], name="unique_work_item_per_run_product")
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            # Leasing walks a run's queued items in (schema, id) order so a batch shares one schema.
            models.Index(fields=["run", "status", "schema", "id"], name="workitem_lease_order"),
        ]


class ExtractedValueQuerySet(models.QuerySet):
    # Where for_product_page() puts each value's changes still standing, newest first.
    STANDING_CHANGES = "standing_changes"

    def for_product_page(self) -> "ExtractedValueQuerySet":
        """The values with what the product page shows of each: its run, attribute, review and
        reviewer, and the changes of its history still standing with their bulk actions (the newest
        says how its review state was made: review.ValueReview.state): a handful of queries whatever
        the number of values."""
        # The history is the review app's, which sits above this one: reached through the relation
        # it adds, not imported. Which changes still stand is its rule (ValueEvent.objects.standing).
        history = self.model._meta.get_field("events").related_model
        standing = Prefetch(
            "events",
            queryset=history.objects.standing().select_related("bulk"),
            to_attr=self.STANDING_CHANGES,
        )
        return self.select_related("run", "attribute", "review", "review__reviewed_by").prefetch_related(
            standing
        )


class ExtractedValue(models.Model):
    """One (run, product, attribute) value with its confidence, as the worker wrote it.

    Its review state (status, reviewed value, version) is the review app's: review.ValueReview,
    one row per value, opened by the code that writes values (runner/leases.py)."""

    objects = ExtractedValueQuerySet.as_manager()

    run = models.ForeignKey(Run, related_name="values", on_delete=models.CASCADE)
    product = models.ForeignKey(Product, related_name="extracted_values", on_delete=models.CASCADE)
    attribute = models.ForeignKey(Attribute, related_name="extracted_values", on_delete=models.PROTECT)
    raw_text = models.TextField(blank=True)
    value = models.TextField(blank=True, help_text="Normalized value; 'n/a' when the attribute is absent.")
    confidence = models.FloatField(default=0.0)
    truncated = models.BooleanField(default=False)
    steps = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "product", "attribute"], name="unique_value_per_run_product_attribute"
            )
        ]
        indexes = [
            # The queue over all statuses walks a run's values by (confidence, id) and stops after a
            # page, instead of sorting tens of thousands of rows for every page.
            models.Index(fields=["run", "confidence", "id"], name="value_queue_order"),
        ]


class RunIncident(models.Model):
    """Something that interrupted a run and how it recovered (a worker that died, PostgreSQL away):
    the run page lists them, so a run that finished after a failure says what happened."""

    class Kind(models.TextChoices):
        LEASE_TAKEN_OVER = "lease_taken_over", "Batch taken over"
        LEASE_RELEASED = "lease_released", "Batch given back"
        DATABASE_LOST = "database_lost", "Database connection lost"
        MODEL_MISMATCH = "model_mismatch", "Another copy of the model"

    run = models.ForeignKey(Run, related_name="incidents", on_delete=models.CASCADE)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    worker = models.CharField(max_length=200, blank=True)
    message = models.TextField()
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]

    def __str__(self):
        return self.message


class ModelLoadFailure(models.Model):
    """A worker that could not load a run's model. The run waits for another worker (the run page
    shows each failure) until settings.EXTRACTION_MAX_LOAD_FAILURES of them, then fails with the last error."""

    run = models.ForeignKey(Run, related_name="load_failures", on_delete=models.CASCADE)
    worker = models.CharField(max_length=200)
    model_dir = models.CharField(max_length=500)
    error = models.TextField()
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]

    @property
    def model_label(self) -> str:
        return self.model_dir or "(bundled)"

    def __str__(self):
        return f"worker {self.worker} could not load model {self.model_label}: {self.error}"
