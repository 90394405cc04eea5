"""Creating and closing campaigns: the seeded sample and the side of each item."""

import random
import re
from dataclasses import dataclass

from django.db import transaction

from evaluation.models import Campaign, CampaignItem, System
from evaluation.systems import covered_product_ids

# Words a rater-visible campaign name must not hold: they would tell raters what is compared.
DECODER_WORDS = ("hpd", "ar", "autoregressive", "hyper-parallel", "hyperparallel")


class CampaignError(ValueError):
    """The campaign cannot be created as asked; the message names the field and the reason."""


def draw_sample(product_ids, size: int, seed: int) -> list[tuple[int, bool]]:
    """(product id, first system is A) for a seeded random sample of `size` products.

    Sides are exactly balanced (half the items show the first system as A, the odd one out goes
    to A) and shuffled with the same seed, so position bias cannot favour either system and the
    same seed over the same products always gives the same sample and sides.
    """
    rng = random.Random(seed)
    chosen = rng.sample(sorted(product_ids), size)
    sides = [i % 2 == 0 for i in range(size)]
    rng.shuffle(sides)
    return list(zip(chosen, sides, strict=True))


def eligible_product_ids(first: System, second: System) -> set[int]:
    """Products both systems produced values for."""
    return covered_product_ids(first) & covered_product_ids(second)


def check_name(name: str, first: System, second: System) -> str:
    name = name.strip()
    if not name:
        raise CampaignError("name: give the campaign a name")
    lowered = name.lower()
    words = set(re.findall(r"[a-z0-9-]+", lowered))
    leaks = [w for w in DECODER_WORDS if w in words]
    names = [s.name for s in (first, second)] + [s.run.name for s in (first, second) if s.run and s.run.name]
    leaks += [n for n in names if n.lower() in lowered]
    if first.run and str(first.run.pk) in words or second.run and str(second.run.pk) in words:
        leaks.append("a run number")
    if leaks:
        raise CampaignError(
            f"name: raters see the campaign name, so it must not name the systems (it mentions {', '.join(leaks)})"
        )
    return name


@dataclass(frozen=True)
class CampaignSpec:
    name: str
    first: System
    second: System
    sample_size: int
    seed: int
    raters_per_item: int
    raters: tuple = ()


def do_create_campaign(spec: CampaignSpec, user=None) -> Campaign:
    """Draw the sample and the sides, and store the campaign with its items in one transaction."""
    if spec.first.pk == spec.second.pk:
        raise CampaignError("systems: choose two different systems")
    name = check_name(spec.name, spec.first, spec.second)
    if spec.raters_per_item < 1:
        raise CampaignError("raters per item: at least 1")
    if spec.raters and spec.raters_per_item > len(spec.raters):
        raise CampaignError(
            f"raters per item: {spec.raters_per_item} asked but only {len(spec.raters)} raters chosen"
        )
    eligible = eligible_product_ids(spec.first, spec.second)
    if spec.sample_size < 1:
        raise CampaignError("sample size: at least 1")
    if spec.sample_size > len(eligible):
        raise CampaignError(
            f"sample size: {spec.sample_size} asked but only {len(eligible)} products have values from both systems"
        )
    with transaction.atomic():
        campaign = Campaign.objects.create(
            name=name,
            first_system=spec.first,
            second_system=spec.second,
            sample_size=spec.sample_size,
            seed=spec.seed,
            raters_per_item=spec.raters_per_item,
            created_by=user,
        )
        campaign.raters.set(spec.raters)
        CampaignItem.objects.bulk_create(
            CampaignItem(campaign=campaign, product_id=product_id, position=position, first_is_a=first_is_a)
            for position, (product_id, first_is_a) in enumerate(
                draw_sample(eligible, spec.sample_size, spec.seed), start=1
            )
        )
    return campaign


def do_set_status(campaign: Campaign, status: str) -> None:
    with transaction.atomic():
        Campaign.objects.filter(pk=campaign.pk).update(status=status)
    campaign.status = status
