"""Blind A/B campaigns: two systems, a seeded sample of products, sides per item, raters' votes.

Blindness rests on one rule: rater-facing pages and requests name items by `CampaignItem.token`
only. Which system is side A lives in `CampaignItem.first_is_a` and never leaves the server
until the admin-only results page.
"""

import secrets

from django.conf import settings
from django.db import models

from catalog.models import Catalog, Product
from extraction.models import Run


def new_token() -> str:
    """An opaque item name for rater pages: random, so it says nothing about sides or systems."""
    return secrets.token_urlsafe(12)


class System(models.Model):
    """One contender: an extraction run, or values imported from an outside system."""

    class Kind(models.TextChoices):
        RUN = "run", "Extraction run"
        IMPORTED = "imported", "Imported outputs"

    name = models.CharField(max_length=200, unique=True, help_text="Shown only on results pages.")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="ab_system")
    catalog = models.ForeignKey(
        Catalog, null=True, blank=True, on_delete=models.PROTECT, help_text="Where imported SKUs live."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(kind="run", run__isnull=False) | models.Q(kind="imported", run__isnull=True)
                ),
                name="system_run_matches_kind",
            )
        ]

    def __str__(self):
        return self.name


class ImportedValue(models.Model):
    """One value of an outside system, keyed by attribute name (outside systems know no schema ids)."""

    system = models.ForeignKey(System, related_name="imported_values", on_delete=models.CASCADE)
    product = models.ForeignKey(Product, related_name="+", on_delete=models.CASCADE)
    attribute_name = models.CharField(max_length=100)
    value = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["system", "product", "attribute_name"], name="unique_imported_value"
            )
        ]


class Campaign(models.Model):
    """A comparison of two systems over a seeded random sample of products."""

    class Status(models.TextChoices):
        OPEN = "open", "Open for votes"
        CLOSED = "closed", "Closed"

    name = models.CharField(max_length=200, help_text="Raters see this name: it must not name the systems.")
    first_system = models.ForeignKey(System, related_name="+", on_delete=models.PROTECT)
    second_system = models.ForeignKey(System, related_name="+", on_delete=models.PROTECT)
    sample_size = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    raters_per_item = models.PositiveSmallIntegerField(default=2)
    raters = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="ab_campaigns", help_text="Empty: every rater."
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(first_system=models.F("second_system")), name="campaign_systems_differ"
            ),
            models.CheckConstraint(
                condition=models.Q(raters_per_item__gte=1), name="campaign_raters_per_item"
            ),
        ]

    def __str__(self):
        return self.name


class CampaignItem(models.Model):
    """One sampled product; which system is side A was drawn from the seed and is kept here."""

    campaign = models.ForeignKey(Campaign, related_name="items", on_delete=models.CASCADE)
    product = models.ForeignKey(Product, related_name="+", on_delete=models.PROTECT)
    position = models.PositiveIntegerField(help_text="Order in the sample.")
    first_is_a = models.BooleanField(help_text="True: the campaign's first system is shown as A (left).")
    token = models.CharField(max_length=32, unique=True, default=new_token, editable=False)

    class Meta:
        ordering = ["campaign", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "product"], name="unique_campaign_product"),
            models.UniqueConstraint(fields=["campaign", "position"], name="unique_campaign_position"),
        ]


class Assignment(models.Model):
    """An item handed to a rater, so that N raters per item is kept even when raters work at once."""

    item = models.ForeignKey(CampaignItem, related_name="assignments", on_delete=models.CASCADE)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, related_name="+", on_delete=models.CASCADE)
    assigned_at = models.DateTimeField(auto_now_add=True)
    # Set when the rater votes: a done assignment always counts towards the item's N raters, an
    # open one only while it is fresh (an abandoned item goes back to the pool).
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["item", "rater"], name="unique_assignment")]


class VoteQuerySet(models.QuerySet):
    def current(self):
        """Each rater's latest vote per item: what every statistic counts."""
        return self.filter(superseded_at__isnull=True)


class Vote(models.Model):
    """One rater's judgement of one item, by side. One current vote per rater per item, enforced by
    the database; a changed vote stays as a superseded record (the history), counted nowhere."""

    class Choice(models.TextChoices):
        A = "a", "A is better"
        B = "b", "B is better"
        TIE = "tie", "Tie"
        BOTH_BAD = "both_bad", "Both bad"

    item = models.ForeignKey(CampaignItem, related_name="votes", on_delete=models.CASCADE)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, related_name="ab_votes", on_delete=models.PROTECT)
    choice = models.CharField(max_length=10, choices=Choice.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when the rater changed this vote (while the campaign was open): the newer vote counts.
    superseded_at = models.DateTimeField(null=True, blank=True)

    objects = VoteQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "rater"],
                condition=models.Q(superseded_at__isnull=True),
                name="one_current_vote_per_rater_per_item",
            ),
            models.CheckConstraint(
                condition=models.Q(choice__in=["a", "b", "tie", "both_bad"]), name="vote_choice_valid"
            ),
        ]
