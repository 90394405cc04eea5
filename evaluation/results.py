"""Unblinding for admins: a campaign's votes as system outcomes, and every figure of the results page.

The numbers come from evaluation.stats, the same module `ab_stats` runs on a CSV of votes.
"""

from collections import Counter
from dataclasses import dataclass

from evaluation import stats
from evaluation.models import Campaign, Vote
from evaluation.systems import outputs_of, paired_outputs

SIDE_OF_CHOICE = {
    Vote.Choice.A: stats.LEFT,
    Vote.Choice.B: stats.RIGHT,
    Vote.Choice.TIE: stats.TIE,
    Vote.Choice.BOTH_BAD: stats.BOTH_BAD,
}
EXPORT_HEADER = (
    "item",
    "rater",
    "left_system",
    "right_system",
    "vote",
    "sku",
    "category",
    "winner",
    "comment",
    "voted_at",
)


@dataclass(frozen=True)
class CampaignVote:
    """A vote with everything the results page and the export need, sides already unblinded."""

    record: stats.VoteRecord
    product_id: int
    sku: str
    category: str
    comment: str
    voted_at: str

    def export_row(self) -> tuple:
        r = self.record
        return (r.item, r.rater, r.left_system, r.right_system, r.vote, self.sku, self.category, r.outcome,
                self.comment, self.voted_at)  # fmt: skip


def campaign_votes(campaign: Campaign) -> list[CampaignVote]:
    first, second = campaign.first_system.name, campaign.second_system.name
    votes = (
        Vote.objects.current()  # a changed vote counts once, as its latest choice
        .filter(item__campaign=campaign)
        .select_related("item__product__catalog", "item__product__category", "rater")
        .order_by("item__position", "created_at", "id")
    )
    votes = list(votes)
    skus = Counter((v.item.product.sku, v.item.product.catalog_id) for v in votes)
    ambiguous = len({sku for sku, _ in skus}) < len(skus)  # the same SKU from two catalogs
    result = []
    for vote in votes:
        product = vote.item.product
        item = f"{product.catalog.name}/{product.sku}" if ambiguous else product.sku
        left, right = (first, second) if vote.item.first_is_a else (second, first)
        result.append(
            CampaignVote(
                record=stats.VoteRecord(item, vote.rater.username, left, right, SIDE_OF_CHOICE[vote.choice]),
                product_id=product.pk,
                sku=product.sku,
                category=product.category.name,
                comment=vote.comment,
                voted_at=vote.created_at.isoformat(timespec="seconds"),
            )
        )
    return result


def differing_attributes(campaign: Campaign) -> dict[int, list[str]]:
    """{product id: attribute names whose values differ between the two systems}."""
    product_ids = list(campaign.items.values_list("product_id", flat=True))
    first = outputs_of(campaign.first_system, product_ids)
    second = outputs_of(campaign.second_system, product_ids)
    result = {}
    for product_id in product_ids:
        pairs = paired_outputs(first.get(product_id, {}), second.get(product_id, {}))
        result[product_id] = [pair.attribute for pair in pairs if pair.differs]
    return result


# Below this many decisive votes (wins + losses) even the exact interval is too wide to lean on.
MIN_DECISIVE_VOTES = 30


def _with_decisive_share(name: str, figures: dict) -> dict:
    """The headline figure: the share of decisive votes won, whose exact (Clopper-Pearson) interval
    the summary carries; the win rate with ties as half and its bootstrap interval come second."""
    decisive = figures["wins"] + figures["losses"]
    share = figures["wins"] / decisive if decisive else None
    return {"name": name, **figures, "decisive": decisive, "decisive_share": share}


def campaign_results(campaign: Campaign) -> dict:
    """Everything the results page shows (None where there are no votes yet)."""
    votes = campaign_votes(campaign)
    records = [v.record for v in votes]
    first, second = campaign.first_system.name, campaign.second_system.name
    items = campaign.items.count()
    context = {
        "votes": votes,
        "vote_count": len(records),
        "expected_votes": items * campaign.raters_per_item,
        "items": items,
        "items_complete": sum(
            1 for n in Counter(r.item for r in records).values() if n >= campaign.raters_per_item
        ),
        "first": first,
        "second": second,
        "summary": None,
    }
    if not records:
        return context
    summary = stats.summarize(records)
    differing = differing_attributes(campaign)
    category_of = {v.record.item: v.category for v in votes}
    differing_of = {v.record.item: differing.get(v.product_id, []) for v in votes}
    outcome_counts = Counter(r.outcome for r in records)
    context.update(
        summary=summary,
        systems=[_with_decisive_share(n, summary["systems"][n]) for n in (first, second)],
        decisive_votes=outcome_counts[first] + outcome_counts[second],
        few_decisive=outcome_counts[first] + outcome_counts[second] < MIN_DECISIVE_VOTES,
        min_decisive=MIN_DECISIVE_VOTES,
        composition={
            "first_wins": outcome_counts[first],
            "ties": outcome_counts[stats.TIE],
            "second_wins": outcome_counts[second],
            "both_bad": outcome_counts[stats.BOTH_BAD],
        },
        both_bad_rate=outcome_counts[stats.BOTH_BAD] / len(records),
        position=stats.position_bias(records),
        agreement=stats.agreement(records),
        per_attribute=stats.breakdown(records, first, lambda r: differing_of[r.item]),
        per_category=stats.breakdown(records, first, lambda r: [category_of[r.item]]),
        comments=[v for v in votes if v.comment],
    )
    return context
