"""What a rater sees and does: the next item, its two anonymous outputs, the vote, the progress.

Everything here that reaches a rater speaks of sides A and B and of item tokens, never of systems.
"""

from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from accounts.roles import RATER, has_role
from evaluation.models import Assignment, Campaign, CampaignItem, Vote
from evaluation.systems import outputs_of, paired_outputs
from extraction.domain import values_agree

# An item handed out but not voted on goes back to the pool after this long.
ASSIGNMENT_TTL = timedelta(minutes=30)
MAX_COMMENT_CHARS = 2000
ABSENT = ""


class VoteError(ValueError):
    """The vote was refused; the message says why, and nothing was stored."""


def may_rate(campaign: Campaign, user) -> bool:
    if not has_role(user, RATER) or campaign.status != Campaign.Status.OPEN:
        return False
    chosen = campaign.raters.all()
    return not chosen.exists() or chosen.filter(pk=user.pk).exists()


def rateable_campaigns(user):
    """Open campaigns this user may vote in: those naming them, and those open to every rater."""
    open_campaigns = Campaign.objects.filter(status=Campaign.Status.OPEN)
    return open_campaigns.filter(Q(raters=None) | Q(raters=user)).distinct()


def _taken(now) -> Q:
    """Assignments that hold a place among an item's N raters."""
    return Q(assignments__completed_at__isnull=False) | Q(assignments__assigned_at__gte=now - ASSIGNMENT_TTL)


def _places_taken(item_id: int, now) -> int:
    return CampaignItem.objects.filter(pk=item_id).aggregate(n=Count("assignments", filter=_taken(now)))["n"]


def _held(campaign: Campaign, rater):
    """The rater's assignments not voted on yet, oldest first."""
    return (
        Assignment.objects.filter(item__campaign=campaign, rater=rater, completed_at__isnull=True)
        .select_related("item")
        .order_by("assigned_at", "id")
    )


def _still_open(assignment: Assignment, campaign: Campaign) -> bool:
    """False when others filled the item while this rater was away."""
    return assignment.item.votes.current().count() < campaign.raters_per_item


def _open_places(campaign: Campaign, rater, now):
    """Ids of the items this rater may take next, in the order they are handed out."""
    return (
        CampaignItem.objects.filter(campaign=campaign)
        .exclude(assignments__rater=rater)
        .annotate(places=Count("assignments", filter=_taken(now)))
        .filter(places__lt=campaign.raters_per_item)
        .order_by("-places", "position")  # finish items others started before opening new ones
        .values_list("pk", flat=True)
    )


def item_to_show(campaign: Campaign, rater) -> CampaignItem | None:
    """The item the rating page shows, read only (a GET changes nothing): the one handed to this
    rater, else the one next_item would hand them. Its place is taken when they vote, or by the
    next_item of the vote that brings them here."""
    for assignment in _held(campaign, rater):
        if _still_open(assignment, campaign):
            return assignment.item
    first = _open_places(campaign, rater, timezone.now()).first()
    return None if first is None else CampaignItem.objects.get(pk=first)


def next_item(campaign: Campaign, rater) -> CampaignItem | None:
    """Hand the rater the item to judge now (a write, for a POST): the one already handed to
    them, or a new one whose place among its raters is taken for them."""
    with transaction.atomic():
        # One rater's requests one at a time (five votes sent at once): each would otherwise find
        # nothing held yet and take an item of its own, leaving the rater holding several.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", [f"next-item:{campaign.pk}:{rater.pk}"]
            )
        return _next_item(campaign, rater)


def _next_item(campaign: Campaign, rater) -> CampaignItem | None:
    now = timezone.now()
    for assignment in _held(campaign, rater):
        if _still_open(assignment, campaign):
            return assignment.item
        assignment.delete()  # others filled the item while this rater was away
    for item_id in _open_places(campaign, rater, now):
        with transaction.atomic():
            # The row lock makes "count the places, then take one" safe between raters; it is
            # held for two short queries, so a rater arriving at the same moment waits, never skips.
            # of=self: the item's default ordering joins its campaign, and a plain FOR UPDATE would
            # lock the campaign's row too, which raters taking other items then deadlock on.
            item = CampaignItem.objects.select_for_update(of=("self",)).filter(pk=item_id).first()
            if item is None or _places_taken(item_id, now) >= campaign.raters_per_item:
                continue
            _, created = Assignment.objects.get_or_create(item=item, rater=rater)
            if created:
                return item
    return None


@dataclass(frozen=True)
class Row:
    """One attribute shown to the rater: its name and the A and B values."""

    attribute: str
    a: str
    b: str

    @property
    def differs(self) -> bool:
        return not values_agree(self.a, self.b)


def rows_for(item: CampaignItem) -> list[Row]:
    """The attribute rows of an item, in schema order, values placed by the item's stored sides."""
    campaign = item.campaign
    first = outputs_of(campaign.first_system, [item.product_id]).get(item.product_id, {})
    second = outputs_of(campaign.second_system, [item.product_id]).get(item.product_id, {})
    rows = []
    for pair in paired_outputs(first, second):
        a, b = (pair.first, pair.second) if item.first_is_a else (pair.second, pair.first)
        rows.append(Row(pair.attribute, ABSENT if a is None else a, ABSENT if b is None else b))
    return rows


CHOICES = {c.value for c in Vote.Choice}


def do_cast_vote(campaign: Campaign, rater, token: str, choice: str, comment: str = "") -> Vote:
    """Store one vote; refused (VoteError) when the item, the choice or the rater is not right.

    A rater who voted on the item already changes their vote (the campaign is open: may_rate):
    the earlier vote is kept, marked superseded, and only the new one counts.
    """
    if choice not in CHOICES:
        raise VoteError("choose A better, B better, tie or both bad (keys 1 to 4)")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise VoteError(f"the comment is {len(comment)} characters; the limit is {MAX_COMMENT_CHARS}")
    if not may_rate(campaign, rater):
        raise VoteError("this campaign is not open to you for votes")
    try:
        with transaction.atomic():
            item = (
                CampaignItem.objects.select_for_update(of=("self",))
                .filter(campaign=campaign, token=token)
                .first()
            )
            if item is None:
                raise VoteError("that item is not part of this campaign")
            votes = item.votes.current()
            earlier = votes.filter(rater=rater).first()
            if earlier is None and votes.count() >= campaign.raters_per_item:
                raise VoteError("that item already has all its votes; here is another one")
            if earlier is not None:
                earlier.superseded_at = timezone.now()
                earlier.save(update_fields=["superseded_at"])
            vote = Vote.objects.create(item=item, rater=rater, choice=choice, comment=comment)
            assignment, _ = Assignment.objects.get_or_create(item=item, rater=rater)
            assignment.completed_at = vote.created_at
            assignment.save(update_fields=["completed_at"])
    except IntegrityError as exc:  # a second tab sent a vote on the same item at the same moment
        raise VoteError(
            "your other vote on that item arrived at the same moment; look at it and vote again"
        ) from exc
    return vote


def votes_of(campaign: Campaign, rater):
    """The rater's current votes in the campaign, newest first (to look back and change one)."""
    return (
        Vote.objects.current()
        .filter(item__campaign=campaign, rater=rater)
        .select_related("item__product")
        .order_by("-created_at", "-id")
    )


def voted_item(campaign: Campaign, rater, token: str) -> tuple[CampaignItem, Vote]:
    """An item the rater voted on, with their current vote: what the rater opens to change it."""
    vote = votes_of(campaign, rater).filter(item__token=token).select_related("item").first()
    if vote is None:
        raise VoteError("you have no vote on that item in this campaign to change")
    return vote.item, vote


@dataclass(frozen=True)
class Progress:
    done: int
    left: int

    @property
    def total(self) -> int:
        return self.done + self.left

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100


def progress_of(campaign: Campaign, rater) -> Progress:
    """The rater's own progress: items judged, and items still open to them."""
    now = timezone.now()
    done = Vote.objects.current().filter(item__campaign=campaign, rater=rater).count()
    held = sum(1 for assignment in _held(campaign, rater) if _still_open(assignment, campaign))
    open_to_them = _open_places(campaign, rater, now).count()
    return Progress(done=done, left=held + open_to_them)
