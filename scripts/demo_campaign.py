"""Reproduce the demo A/B figures: HPD vs AR on the demo catalog, judged by two scripted raters.

    .venv/bin/python scripts/demo_campaign.py [--size 100] [--json OUT]

Runs the product as a user would (demo catalog, one linked HPD + AR run over every demo product,
a real GPU-queue Celery worker, a blind campaign), then casts the votes of two *scripted* raters
who judge each item against the OA-Mine gold values the demo products carry: the side with more
attributes matching gold wins; equal non-zero counts are a tie, zero on both sides is both bad.
carol compares exactly, dave ignores case and spacing, so their votes can differ. These votes
stand in for people on a machine with nobody to ask; real campaigns are voted in the browser.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slotwise.settings")


def strict(value: str) -> str:
    return value.strip()


def lenient(value: str) -> str:
    return " ".join(value.lower().split())


def judge(rows, gold: dict, norm) -> str:
    """A/B/tie/both_bad by the number of attributes whose value matches the gold value."""
    score_a = score_b = 0
    for row in rows:
        if row.attribute not in gold:
            continue
        truth = norm(str(gold[row.attribute]))
        score_a += norm(row.a) == truth
        score_b += norm(row.b) == truth
    if score_a > score_b:
        return "a"
    if score_b > score_a:
        return "b"
    return "tie" if score_a else "both_bad"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--json", help="write ab_stats' JSON here too")
    parser.add_argument("--category", help="only this demo category (default: every demo product)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from catalog.models import Catalog, Category
    from evaluation.models import Campaign
    from evaluation.voting import do_cast_vote, next_item, rows_for
    from extraction.models import Run
    from extraction.services import RunRequest, do_start_run

    call_command("create_demo_users")
    call_command("load_demo_catalog")
    from catalog.management.commands.load_demo_catalog import DEMO_CATALOG

    catalog = Catalog.objects.get(name=DEMO_CATALOG)
    from django.conf import settings

    hpd, ar = do_start_run(
        RunRequest(
            name="Demo catalog",
            decoder="both",
            catalog=catalog,
            category=Category.objects.get(name=args.category) if args.category else None,
            model_dir=settings.SLOTWISE_MODEL_DIR,
        )
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers", "worker", "-Q", "gpu", "-c", "1", "-n", "demo@%h"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while Run.objects.filter(pk__in=[hpd.pk, ar.pk], status__in=Run.ACTIVE_STATUSES).exists():
            time.sleep(2)
    finally:
        worker.terminate()
        worker.wait()
    for run in Run.objects.filter(pk__in=[hpd.pk, ar.pk]):
        sys.stdout.write(
            f"run {run.pk} {run.decoder}: {run.status}, {run.done}/{run.total} done, {run.failed} failed {run.error}\n"
        )

    call_command(
        "ab_create_campaign", first_run=hpd.pk, second_run=ar.pk, size=args.size, seed=args.seed,
        raters="carol,dave", raters_per_item=2, name="Which attribute values are better?",
    )  # fmt: skip
    campaign = Campaign.objects.order_by("-pk").first()
    for username, norm in (("carol", strict), ("dave", lenient)):
        rater = User.objects.get(username=username)
        while (item := next_item(campaign, rater)) is not None:
            do_cast_vote(campaign, rater, item.token, judge(rows_for(item), item.product.known_values, norm))
    out = args.json or str(ROOT / ".data" / "demo_campaign.json")
    call_command("ab_stats", campaign=campaign.pk, out=Path(out))
    sys.stdout.write(json.dumps(json.loads(Path(out).read_text()), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
