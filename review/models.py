"""Review state of the extracted values: current state, history, gold, background jobs, shortcuts.

ValueReview holds the current review state of one ExtractedValue (extraction/models.py), which
itself only holds what the worker wrote; every change to it goes through review/transition.py,
which also writes a ValueEvent here, so the history is complete. Accepted and corrected values become
GoldValue rows, one per (product, attribute name, schema version), which the quality dashboard
and the `export_gold` command read; each gold row records how it was made (typed blind, a
correction or an acceptance of a named run's value, or the catalog's own value).
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from catalog.models import Product, SchemaVersion
from extraction.domain import NA
from extraction.models import ExtractedValue, ExtractedValueQuerySet, Run


class ValueReview(models.Model):
    """The review state of one extracted value: `version` increases on every change so
    concurrent edits are detected. Opened (pending) by the code that writes the values, in the
    same transaction (review/opening.py)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        CORRECTED = "corrected", "Corrected"
        REJECTED = "rejected", "Rejected"

    value = models.OneToOneField(
        ExtractedValue, primary_key=True, related_name="review", on_delete=models.CASCADE
    )
    # Copies of the value's run and confidence (review/opening.py writes them with the value): the
    # queue filters a run's values by status and walks them by confidence, and only an index over
    # one table serves both, stopping after a page instead of joining and sorting the whole run.
    run = models.ForeignKey(Run, related_name="+", on_delete=models.CASCADE, db_index=False)
    confidence = models.FloatField()
    # A copy of the value's `truncated` (it filled its token budget, so it may be cut short): the
    # queue lists cut values first, from the same index.
    cut = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    reviewed_value = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, related_name="+", on_delete=models.SET_NULL
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(
                fields=["run", "status", "-cut", "confidence", "value"], name="review_queue_cut_by_status"
            ),
            models.Index(fields=["run", "-cut", "confidence", "value"], name="review_queue_cut_order"),
        ]

    def __str__(self):
        return f"value {self.value_id}: {self.status} (version {self.version})"

    # The review's status rules, one place for actions, undo, bulk actions, gold and exports.

    @property
    def is_approved(self) -> bool:
        """The reviewer's value is the value: it is shown, exported, and gold when made by hand."""
        return self.status in APPROVED

    def shown(self, model_value: str) -> str:
        """The value a reader should see: the reviewer's when approved, else the model's."""
        return self.reviewed_value if self.is_approved else model_value

    @classmethod
    def judged(cls, reviewed: str, model_value: str) -> str:
        """The status of a reviewer's value: the model's value kept as it was is an acceptance,
        anything else a correction of it."""
        return cls.Status.ACCEPTED if reviewed == model_value else cls.Status.CORRECTED

    @classmethod
    def after(cls, action: str, model_value: str, correction: str = "") -> tuple[str, str]:
        """(status, reviewed value) a single review action leads to on a model's value;
        `correction`: the reviewer's value for a correction, already checked against the type."""
        Action = ValueEvent.Action
        if action == Action.ACCEPT:
            return cls.Status.ACCEPTED, model_value
        if action == Action.REJECT:
            return cls.Status.REJECTED, ""
        if action == Action.SET_NA:
            return cls.judged(NA, model_value), NA
        if action == Action.CORRECT:
            return cls.judged(correction, model_value), correction
        raise ValueError(f"action: {action!r} is not a review action")

    @staticmethod
    def restored_value(status: str, shown_value: str) -> str:
        """The reviewed value that goes with `status` when a change is undone: an approved state
        holds the value it showed; the others hold none."""
        return shown_value if status in APPROVED else ""

    @classmethod
    def reviewer_for(cls, status: str, user):
        """Who the review names after a change by `user`: nobody once it is pending again."""
        return user if status != cls.Status.PENDING else None

    @classmethod
    def bulk_target(cls, action: str) -> str:
        """The status a bulk action (BulkAction.Action) moves values to."""
        return {BulkAction.Action.ACCEPT: cls.Status.ACCEPTED, BulkAction.Action.REJECT: cls.Status.REJECTED}[
            action
        ]

    @classmethod
    def bulk_changeable(cls, action: str) -> Q:
        """The ExtractedValue rows a bulk `action` may change: never a correction (a person's
        work), nor one already in the target state; a bulk accept (auto-accept included) never
        takes a value cut by the token budget, which a person must read."""
        target = cls.bulk_target(action)
        allowed = ~Q(review__status=cls.Status.CORRECTED) & ~Q(review__status=target)
        if target == cls.Status.ACCEPTED:
            allowed &= Q(truncated=False)
        return allowed

    # The state a reader is told (the product page, the export of values as they stand): the
    # status, with two things named apart that the status hides: "n/a" (the product has no such
    # value, a person's or the model's word) and an acceptance nobody looked at (made in bulk).
    NA_STATE = "n/a"
    BULK_STATE = "accepted in bulk"
    # A bulk accept bounded by a confidence threshold, whichever page started it: what auto-accept does.
    AUTO_STATE = "auto-accepted"

    @classmethod
    def state_of(
        cls, status: str, reviewed_value: str, made_by: str | None, bulk_filters: dict | None
    ) -> str:
        """The state word of a review whose current state was made by the history action `made_by`
        (the newest change still standing, None before any), part of a bulk action with `bulk_filters`
        (its queue filter) where it was one."""
        if status == cls.Status.ACCEPTED and made_by == ValueEvent.Action.BULK_ACCEPT:
            return cls.AUTO_STATE if (bulk_filters or {}).get("min_confidence") else cls.BULK_STATE
        if status in APPROVED and reviewed_value == NA:
            return cls.NA_STATE
        return status

    def standing_change(self) -> "ValueEvent | None":
        """The newest change of the value's history still standing (ValueEvent.objects.standing()):
        it says how the current state was made. A page listing many values prefetches them
        (ExtractedValue.objects.for_product_page()); otherwise they are asked for here."""
        standing = getattr(self.value, ExtractedValueQuerySet.STANDING_CHANGES, None)
        if standing is None:
            return self.value.events.standing().select_related("bulk").first()
        return standing[0] if standing else None

    @property
    def state(self) -> str:
        """This review's state word (state_of), from its prefetched history."""
        change = self.standing_change()
        made_by = change.action if change else None
        bulk_filters = change.bulk.filters if change is not None and change.bulk_id else None
        return self.state_of(self.status, self.reviewed_value, made_by, bulk_filters)

    @property
    def state_class(self) -> str:
        """The state as a CSS class name ("st-accepted-in-bulk", "st-na")."""
        return "st-" + "".join(c if c.isalnum() else "-" for c in self.state.replace("/", ""))


APPROVED = (ValueReview.Status.ACCEPTED, ValueReview.Status.CORRECTED)


class ValueEventQuerySet(models.QuerySet):
    def standing(self) -> "ValueEventQuerySet":
        """The changes still standing, newest first: neither undone nor an undo (an undo puts back
        the state of the newest change still standing), so the first of a value's says how its
        current review state was made. The one definition: gold, the exports and the product page
        all ask it."""
        return (
            self.filter(undone=False).exclude(action=ValueEvent.Action.UNDO).order_by("-version_after", "-id")
        )


class ValueEvent(models.Model):
    """One change to one value's review state: who, when, old, new, and from which run."""

    class Action(models.TextChoices):
        ACCEPT = "accept", "Accepted"
        CORRECT = "correct", "Corrected"
        REJECT = "reject", "Rejected"
        SET_NA = "set_na", "Set to n/a"
        UNDO = "undo", "Undone"
        BULK_ACCEPT = "bulk_accept", "Accepted in bulk"
        BULK_REJECT = "bulk_reject", "Rejected in bulk"

    value = models.ForeignKey(ExtractedValue, related_name="events", on_delete=models.CASCADE)
    run = models.ForeignKey(Run, related_name="review_events", on_delete=models.CASCADE)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=12, choices=Action.choices)
    old_status = models.CharField(max_length=10)
    new_status = models.CharField(max_length=10)
    old_value = models.TextField(blank=True)
    new_value = models.TextField(blank=True)
    # The value's version after this change: an undo is only safe while nobody changed it since.
    version_after = models.PositiveIntegerField()
    undone = models.BooleanField(default=False)
    # The bulk action this change was part of: undo takes back the whole bulk action at once.
    bulk = models.ForeignKey(
        "BulkAction", null=True, blank=True, related_name="events", on_delete=models.SET_NULL
    )

    objects = ValueEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["actor", "undone", "-at"])]

    def __str__(self):
        return f"{self.get_action_display()} value {self.value_id} by {self.actor_id}"


class GoldValue(models.Model):
    """The approved value of an attribute for a product under one schema version, and how it was
    made: the quality dashboard scores a run only on gold that run did not supply."""

    class Provenance(models.TextChoices):
        BLIND = "blind", "Typed blind"
        CORRECTED = "corrected", "Correction of a run's value"
        ACCEPTED = "accepted", "Acceptance of a run's value"
        CATALOG = "catalog", "Catalog's known value"

    product = models.ForeignKey(Product, related_name="gold_values", on_delete=models.CASCADE)
    attribute_name = models.CharField(max_length=100)
    schema = models.ForeignKey(SchemaVersion, related_name="gold_values", on_delete=models.CASCADE)
    value = models.TextField(help_text="The approved value; 'n/a' when the attribute is absent.")
    # Where it came from: the reviewed value (null when seeded from a catalog's known values).
    source = models.ForeignKey(
        ExtractedValue, null=True, blank=True, related_name="gold", on_delete=models.SET_NULL
    )
    provenance = models.CharField(max_length=10, choices=Provenance.choices)
    # The run whose value was accepted or corrected: that run's F1 leaves this gold out.
    from_run = models.ForeignKey(
        Run, null=True, blank=True, related_name="supplied_gold", on_delete=models.SET_NULL
    )
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    approved_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["product", "attribute_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["product", "attribute_name", "schema"],
                name="unique_gold_per_product_attribute_schema",
            ),
            models.CheckConstraint(
                condition=models.Q(provenance__in=["accepted", "corrected"])
                | models.Q(provenance__in=["blind", "catalog"], from_run__isnull=True),
                name="gold_provenance_known_and_runless_when_blind_or_catalog",
            ),
        ]

    def __str__(self):
        return f"{self.product_id}/{self.attribute_name}={self.value} ({self.provenance})"


def provenance_of(gold_value: str, source: ExtractedValue | None) -> tuple[str, int | None]:
    """(provenance, run) of gold taken from a reviewed model value: the run's value kept as it was
    is an acceptance of that run's value, anything else a correction of it. Without a source value
    the gold is the catalog's (blind labels name their provenance themselves)."""
    if source is None:
        return GoldValue.Provenance.CATALOG, None
    kept = gold_value == source.value
    return (GoldValue.Provenance.ACCEPTED if kept else GoldValue.Provenance.CORRECTED), source.run_id


class BackgroundJob(models.Model):
    """Fields shared by the review's background jobs: owner, state and progress."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    # The queue filter the job acts on, as the query parameters of the queue page.
    filters = models.JSONField(default=dict)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class BulkAction(BackgroundJob):
    """Accept or reject everything a queue filter matches, in chunks, with progress."""

    class Action(models.TextChoices):
        ACCEPT = "accept", "Accept"
        REJECT = "reject", "Reject"

    action = models.CharField(max_length=10, choices=Action.choices)
    changed = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="Values changed by someone meanwhile.")

    @property
    def skipped_note(self) -> str:
        """The values left alone, in the words the banner and the job's page show ("" for none)."""
        return f"{self.skipped} skipped: changed by someone else" if self.skipped else ""


class ExportJob(BackgroundJob):
    """A file of values (CSV or JSON, wide or long) written in the background: the approved ones,
    or every value as it stands with its state."""

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSON = "json", "JSON"

    class Shape(models.TextChoices):
        WIDE = "wide", "Wide (one row per product)"
        LONG = "long", "Long (one row per value)"

    class Values(models.TextChoices):
        APPROVED = "approved", "Approved values"
        STANDING = "standing", "Every value as it stands, with its state"

    format = models.CharField(max_length=4, choices=Format.choices)
    shape = models.CharField(max_length=4, choices=Shape.choices)
    values = models.CharField(max_length=8, choices=Values.choices, default=Values.APPROVED)
    file = models.FileField(upload_to="review-exports/", blank=True)

    @property
    def filename(self) -> str:
        return f"{self.file_stem(self.values)}-{self.shape}-{self.pk}.{self.format}"

    @classmethod
    def file_stem(cls, values: str) -> str:
        return "approved-values" if values == cls.Values.APPROVED else "values-as-they-stand"


class ReviewerSettings(models.Model):
    """A reviewer's own keyboard shortcuts and GPU price (the defaults live in review/shortcuts.py)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, related_name="review_settings", on_delete=models.CASCADE
    )
    shortcuts = models.JSONField(
        default=dict, blank=True, help_text="action -> key, overriding the defaults."
    )
    gpu_price_per_hour = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)

    class Meta:
        verbose_name_plural = "reviewer settings"
