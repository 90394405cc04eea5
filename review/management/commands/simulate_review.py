"""How many values a person reads before the catalog is right (issue #52):

    manage.py simulate_review ../shared/data/ave/oa-mine/dev.jsonl [--learn] [--json]

Loads the products file as a new catalog, decodes it with HPD and the catalog's default model in
this process, and plays a reviewer who knows the file's gold and works through the product's own
logic (review/simulation.py says how, and what a look costs). Prints the curve of looks against the
share of the catalog's slots that are right and a summary; with --json, JSON lines, the summary last:
    {"products": N, "slots": S, "looks_to_95": L95, "looks_to_98": L98, "right_share_final": R,
     "wrong_accepted_unlooked": W, ...}   (null where a level is never reached)
"""

import json
from pathlib import Path

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.roles import ADMIN
from review.bootstrap import MIN_PRODUCTS
from review.filters import SORTS, USEFUL
from review.products_file import ProductsFileError, read_products
from review.simulated_catalog import load_catalog
from review.simulation import DEFAULT_TARGET, Hooks, Plan, Reviewer
from runner.inline import JobSize, decode_run, train_and_promote

REVIEWER = "simulated-reviewer"
DEFAULT_LEARN_EVERY = 50  # reviewed products between two training jobs


def simulated_user() -> User:
    """The reviewer the simulation's changes are recorded under (an admin: auto-accept and training
    are admin actions); it cannot sign in."""
    user, created = User.objects.get_or_create(username=REVIEWER)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get_or_create(name=ADMIN)[0])
    return user


def positive(text: str) -> int:
    number = int(text)
    if number < 0:
        raise ValueError(text)
    return number


class Command(BaseCommand):
    help = "Measure the looks a reviewer needs before a products file's catalog is right."

    def add_arguments(self, parser):
        parser.add_argument("file", help="a products file in the format of shared/data/ave (JSON lines)")
        parser.add_argument(
            "--learn", action="store_true", help="train whenever the reviewed products grew by --learn-every"
        )
        parser.add_argument("--json", action="store_true", help="JSON lines: the curve, then the summary")
        parser.add_argument("--max-looks", type=positive, default=None, help="stop after this many looks")
        parser.add_argument(
            "--blind",
            type=positive,
            default=MIN_PRODUCTS,
            help=f"products labelled blind first (default {MIN_PRODUCTS})",
        )
        parser.add_argument(
            "--blind-most",
            type=positive,
            default=0,
            help="label more products blind while the auto-accept page asks for them before it could "
            "pool a threshold, up to this many products in all (default 0: never more than --blind)",
        )
        parser.add_argument(
            "--target", type=float, default=100 * DEFAULT_TARGET, help="auto-accept's precision, in percent"
        )
        parser.add_argument("--sort", choices=list(SORTS), default=USEFUL, help="the queue's order")
        parser.add_argument(
            "--every",
            type=positive,
            default=None,
            help="print a curve point every this many looks (default: 1%% of the slots)",
        )
        parser.add_argument("--learn-every", type=positive, default=DEFAULT_LEARN_EVERY)
        parser.add_argument(
            "--learn-minutes",
            type=float,
            default=None,
            help="a training job's time cap (default TRAINING_MINUTES)",
        )
        parser.add_argument("--learn-steps", type=positive, default=None, help="a training job's step cap")
        parser.add_argument(
            "--learn-batch-tokens", type=positive, default=None, help="a training job's tokens per step"
        )

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not 0 < options["target"] <= 100:
            raise CommandError(f"--target: {options['target']} is outside 0 to 100 percent")
        try:
            products = read_products(path)
            with (
                transaction.atomic()
            ):  # a file the import refuses leaves nothing behind, its reviewer neither
                user = simulated_user()
                catalog = load_catalog(path, products, user)
        except ProductsFileError as exc:
            raise CommandError(str(exc)) from None
        size = JobSize(options["learn_minutes"], options["learn_steps"], options["learn_batch_tokens"])
        hooks = Hooks(
            decode=decode_run, learn=(lambda c: learned(c, size, user)) if options["learn"] else None
        )
        plan = Plan(
            max_looks=options["max_looks"],
            blind_products=options["blind"],
            blind_most=options["blind_most"] or None,
            target=options["target"] / 100,
            sort=options["sort"],
            learn_every=options["learn_every"] if options["learn"] else None,
        )
        printer = CurvePrinter(self.stdout.write, options["json"], options["every"])
        reviewer = Reviewer(catalog, products, user, plan, hooks, on_point=printer.point)
        printer.slots = reviewer.outcome.slots
        outcome = reviewer.work()
        printer.summary(outcome.summary(), catalog)


def learned(catalog, size: JobSize, user) -> dict:
    job = train_and_promote(catalog, size, user)
    if job is None:
        return {"job": None}
    return {"job": job.pk, "status": job.status, "gain": (job.evaluation or {}).get("gain")}


class CurvePrinter:
    """Curve points as they come: every `every` looks (default 1% of the slots) and every event."""

    def __init__(self, write, as_json: bool, every: int | None):
        self.write, self.as_json, self.every = write, as_json, every
        self.slots = 0
        self.next_at = 0

    def point(self, point) -> None:
        step = self.every or max(1, self.slots // 100)
        if point.event is None and point.looks < self.next_at:
            return
        self.next_at = (point.looks // step + 1) * step
        share = point.right / self.slots if self.slots else 0.0
        if self.as_json:
            self.write(
                json.dumps({"looks": point.looks, "right_share": round(share, 4), **(point.event or {})})
            )
        elif point.event:
            details = ", ".join(f"{k} {v}" for k, v in point.event.items() if k != "event")
            self.write(
                f"{point.looks:>6} looks  {share:6.1%} right  {point.event['event']}{': ' + details if details else ''}"
            )

    def summary(self, summary: dict, catalog) -> None:
        if self.as_json:
            self.write(json.dumps(summary))
            return
        slots = summary["slots"]

        def looks(level):
            found = summary[f"looks_to_{level}"]
            return "never" if found is None else f"{found} looks ({found / slots:.0%} of the slots)"

        self.write(
            f"{summary['products']} products, {slots} slots in catalog {catalog.name!r}; the model alone got "
            f"{summary['model_right_share']:.1%} right.\n"
            f"95% right after {looks(95)}; 98% right after {looks(98)}.\n"
            f"In the end {summary['right_share_final']:.1%} right after {summary['looks']} looks; "
            f"{summary['wrong_accepted_unlooked']} wrong values accepted without a look."
        )
