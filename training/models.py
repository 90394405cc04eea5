"""Training jobs and the points of learning curves. The versions a job starts from and makes live
in the model registry (registry/models.py).

A training job's state, its progress and its last checkpoint (an archive, registry/archive.py) are
its TrainingJob row, so another worker can resume a job whose worker died. This module must never
import torch (the web process imports it).
"""

from django.conf import settings
from django.db import models

from catalog.models import Catalog
from registry.models import ModelVersion


class TrainingJob(models.Model):
    """Fine-tuning a catalog's current version on its reviewed gold, on the `train` queue."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Phase(models.TextChoices):
        PREPARING = "preparing", "Loading the model and the data"
        TRAINING = "training", "Training"
        EVALUATING = "evaluating", "Decoding the held-back products with the old and the new version"
        REGISTERING = "registering", "Storing the new version"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)

    catalog = models.ForeignKey(Catalog, related_name="training_jobs", on_delete=models.CASCADE)
    parent = models.ForeignKey(ModelVersion, related_name="training_jobs", on_delete=models.PROTECT)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=12, choices=Phase.choices, blank=True)
    # What it was asked: minutes of training (the time cap), the seed of the held-back draw and of
    # training, the share held back, and the step cap and batch size (tests make tiny jobs).
    minutes = models.FloatField()
    seed = models.IntegerField(default=0)
    holdout_share = models.FloatField()
    max_steps = models.PositiveIntegerField()
    batch_tokens = models.PositiveIntegerField()
    # Drawn when the job is started: product ids held back (never trained on) and trained on, and
    # the gold counts by provenance of each part.
    held_back = models.JSONField(default=list)
    trained_on = models.JSONField(default=list)
    counts = models.JSONField(default=dict)
    # Live progress, written by the worker each step.
    step = models.PositiveIntegerField(default=0)
    loss = models.FloatField(null=True, blank=True)
    train_seconds = models.FloatField(default=0.0)
    owner = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # The last checkpoint (an archive, registry/archive.py): a worker that takes over resumes here.
    checkpoint = models.BinaryField(blank=True, default=b"")
    checkpoint_step = models.PositiveIntegerField(default=0)
    checkpoint_seconds = models.FloatField(default=0.0)
    # What happened to the job, in words, oldest first (taken over, resumed, cancelled ...).
    events = models.JSONField(default=list)
    evaluation = models.JSONField(default=dict, blank=True)
    result = models.OneToOneField(
        ModelVersion, null=True, blank=True, related_name="made_by_job", on_delete=models.SET_NULL
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"Training job {self.pk} ({self.catalog})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

    @property
    def budget_seconds(self) -> float:
        return self.minutes * 60

    @property
    def seconds_left(self) -> float:
        return max(0.0, self.budget_seconds - self.train_seconds)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        by_time = self.train_seconds / self.budget_seconds if self.budget_seconds else 0
        by_steps = self.step / self.max_steps if self.max_steps else 0
        return min(100, int(100 * max(by_time, by_steps)))


class LearningCurvePoint(models.Model):
    """One point of a learning curve (`manage.py learning_curve`): an AVE file imported as a catalog,
    N of its products reviewed in one order, a training job on them, and the old and the new
    version's F1 on the products nobody reviewed. The catalog's model page draws the points of its
    file, both orders, as a curve."""

    class Order(models.TextChoices):
        USEFUL = "useful", "Most useful first"
        RANDOM = "random", "Random"

    catalog = models.OneToOneField(Catalog, related_name="learning_curve_point", on_delete=models.CASCADE)
    data_name = models.CharField(max_length=300, help_text="The AVE file, as folder/name.")
    order = models.CharField(max_length=10, choices=Order.choices)
    seed = models.IntegerField(default=0)
    # 0: scored on every product the point left unreviewed; else on this fixed share of the file,
    # the same products for every point with the share (tools/bench/learning_curve.scoring_skus)
    score_share = models.FloatField(default=0.0)
    n_reviewed = models.PositiveIntegerField()
    n_remaining = models.PositiveIntegerField()
    f1_before = models.FloatField()
    f1_after = models.FloatField()
    interval_before = models.JSONField(null=True, blank=True)  # [low, high], bootstrap 95% over products
    interval_after = models.JSONField(null=True, blank=True)
    # The same decodes scored as a reviewer types gold (every schema attribute: the file's value or
    # "n/a"), as the reviewed products were typed and as the job's proof scores; null on older points.
    typed_before = models.FloatField(null=True, blank=True)
    typed_after = models.FloatField(null=True, blank=True)
    typed_interval_before = models.JSONField(null=True, blank=True)
    typed_interval_after = models.JSONField(null=True, blank=True)
    job = models.ForeignKey(TrainingJob, null=True, on_delete=models.SET_NULL, related_name="+")
    job_minutes = models.FloatField(help_text="The training job from start to end (training and its proof).")
    minutes = models.FloatField(help_text="The whole point: import, decode, review, job, scoring.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["data_name", "order", "n_reviewed", "id"]

    @property
    def scored_on(self) -> str:
        """What the point's F1 is measured on, in words."""
        if self.score_share:
            return f"a fixed {self.score_share:.0%} of the file that nobody reviews"
        return "the products nobody reviewed"

    def __str__(self):
        return (
            f"{self.data_name} {self.order} N={self.n_reviewed}: {self.f1_before:.3f} -> {self.f1_after:.3f}"
        )
