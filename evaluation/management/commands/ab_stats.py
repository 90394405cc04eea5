"""Statistics of blind A/B votes from a CSV (or from a campaign in the database), written as JSON."""

import json
import math
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evaluation.stats import VotesError, summarize
from evaluation.votes_csv import read_votes


def _clean(value):
    """JSON has no NaN: undefined figures are written as null."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


class Command(BaseCommand):
    # Reading a CSV needs no database and no URL map: run even where the rest is misconfigured.
    requires_system_checks = []
    help = (
        "Win rates, 95% intervals (Clopper-Pearson and bootstrap over items), sign test, position bias "
        "and inter-rater agreement of a votes CSV with the columns item, rater, left_system, "
        "right_system, vote (left, right, tie, both_bad)."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--votes", type=Path, help="CSV of votes (the results page exports one)")
        source.add_argument("--campaign", type=int, help="id of a campaign in the database")
        parser.add_argument("--json", type=Path, required=True, dest="out", help="where to write the JSON")

    def handle(self, *args, votes=None, campaign=None, out=None, **options):
        records = self._from_csv(votes) if votes else self._from_campaign(campaign)
        try:
            result = _clean(summarize(records))
        except VotesError as exc:
            raise CommandError(f"{votes or f'campaign {campaign}'}: {exc}") from exc
        try:
            out.write_text(
                json.dumps(result, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8"
            )
        except OSError as exc:
            raise CommandError(f"cannot write {out}: {exc.strerror}") from exc
        for name, s in result["systems"].items():
            rate = "n/a" if s["win_rate"] is None else f"{s['win_rate']:.3f}"
            self.stdout.write(
                f"{name}: {s['wins']} wins, {s['losses']} losses, {s['ties']} ties, "
                f"{s['both_bad']} both bad; win rate {rate}"
            )
        self.stdout.write(
            f"sign test p = {result['sign_test_p']}; position bias p = {result['position_bias_p']}"
        )
        self.stdout.write(f"agreement: {result['agreement']}; written to {out}")

    def _from_csv(self, path: Path):
        try:
            with path.open(encoding="utf-8-sig", newline="") as handle:
                return read_votes(handle)
        except FileNotFoundError as exc:
            raise CommandError(f"{path}: no such file") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
        except VotesError as exc:
            raise CommandError(f"{path}: {exc}") from exc

    def _from_campaign(self, pk: int):
        from evaluation.models import Campaign
        from evaluation.results import campaign_votes

        campaign = Campaign.objects.filter(pk=pk).select_related("first_system", "second_system").first()
        if campaign is None:
            raise CommandError(f"there is no campaign {pk}")
        return [v.record for v in campaign_votes(campaign)]
