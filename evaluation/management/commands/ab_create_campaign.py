"""Create an A/B campaign between two finished runs (by default the newest HPD and AR runs)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from evaluation.campaigns import CampaignError, CampaignSpec, do_create_campaign, eligible_product_ids
from evaluation.systems import system_for_run
from extraction.models import Run

DEFAULT_SEED = 2024
DEFAULT_SIZE = 40


class Command(BaseCommand):
    help = (
        "Create a blind A/B campaign comparing two finished runs: --first-run/--second-run ids, or by "
        "default the newest finished HPD run against the newest finished AR run. Casts no votes."
    )

    def add_arguments(self, parser):
        parser.add_argument("--first-run", type=int, help="default: the newest finished HPD run")
        parser.add_argument("--second-run", type=int, help="default: the newest finished AR run")
        parser.add_argument("--name", default="Catalog attributes: which output is better?")
        parser.add_argument(
            "--size", type=int, default=DEFAULT_SIZE, help="products to sample (capped to what both cover)"
        )
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
        parser.add_argument("--raters-per-item", type=int, default=2)
        parser.add_argument("--raters", default="", help="comma-separated usernames; empty: every rater")

    def handle(self, *args, **o):
        first = self._run(o["first_run"], Run.Decoder.HPD)
        second = self._run(o["second_run"], Run.Decoder.AR)
        users = [u for u in o["raters"].split(",") if u.strip()]
        raters = list(get_user_model().objects.filter(username__in=users))
        unknown = set(users) - {u.username for u in raters}
        if unknown:
            raise CommandError(f"--raters: no user called {', '.join(sorted(unknown))}")
        first_system, second_system = system_for_run(first), system_for_run(second)
        size = min(o["size"], len(eligible_product_ids(first_system, second_system)))
        spec = CampaignSpec(
            name=o["name"],
            first=first_system,
            second=second_system,
            sample_size=size,
            seed=o["seed"],
            raters_per_item=o["raters_per_item"],
            raters=tuple(raters),
        )
        try:
            campaign = do_create_campaign(spec)
        except CampaignError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Campaign {campaign.pk} “{campaign.name}”: {first_system.name} vs {second_system.name}, "
            f"{campaign.sample_size} items, seed {campaign.seed}, {campaign.raters_per_item} raters per item. "
            f"Raters vote at /ab/campaigns/{campaign.pk}/rate/; results at /ab/campaigns/{campaign.pk}/results/"
        )

    def _run(self, pk: int | None, decoder: str) -> Run:
        runs = Run.objects.filter(status=Run.Status.DONE)
        run = (
            runs.filter(pk=pk).first()
            if pk
            else runs.filter(decoder=decoder).order_by("-finished_at", "-pk").first()
        )
        if run is None:
            which = f"run {pk}" if pk else f"finished {decoder.upper()} run"
            raise CommandError(f"there is no {which}: start one on the Runs page and let it finish")
        return run
