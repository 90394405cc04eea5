"""`manage.py learning_curve --data FILE.jsonl|DOMAIN/val.tsv --review N [--order useful|random] [--seed S]`: one
point of the learning curve, through the real run and training workers (tools/bench/learning_curve.py)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tools.bench.learning_curve import ORDERS, CurveError, CurveRequest, run_point, summary


class Command(BaseCommand):
    help = (
        "Import an AVE file as a catalog, decode it, review N products from the file's gold, train on "
        "them, and print F1 before / after on the products nobody reviewed (last line: JSON)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--data",
            required=True,
            type=Path,
            help="AVE JSON lines (oa-mine, ae-110k, wdc-pave) or an ImplicitAVE domain file (DOMAIN/val.tsv)",
        )
        parser.add_argument("--review", required=True, type=int, help="products to review (N)")
        parser.add_argument("--order", choices=ORDERS, default="useful", help="which products are reviewed")
        parser.add_argument("--seed", type=int, default=0, help="seed of the random order and the job")
        parser.add_argument("--minutes", type=float, help="training minutes (default: the job's default)")
        parser.add_argument(
            "--score-share",
            type=float,
            default=0.0,
            help="score on this fixed share of the file, drawn by a seed of its own and never reviewed, so "
            "that points of any order, N and seed compare (default 0: on every product left unreviewed)",
        )
        parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds to wait for each step")

    def handle(self, *args, **options):
        if not options["data"].is_file():
            raise CommandError(f"--data {options['data']}: no such file")
        request = CurveRequest(
            data=options["data"], review=options["review"], order=options["order"], seed=options["seed"],
            minutes=options["minutes"], timeout=options["timeout"], score_share=options["score_share"],
        )  # fmt: skip
        try:
            point = run_point(request, say=self.stdout.write)
        except CurveError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"F1 on {point.scored_on}, {point.n_remaining} products ({point.order} order, N={point.n_reviewed}):\n"
            f"  standard (judged pairs): before {point.f1_before:.3f} {fmt(point.interval_before)}, "
            f"after {point.f1_after:.3f} {fmt(point.interval_after)}\n"
            f"  as a reviewer types gold (n/a where the title has none): before {point.typed_before:.3f} "
            f"{fmt(point.typed_interval_before)}, after {point.typed_after:.3f} {fmt(point.typed_interval_after)}\n"
            f"  job {point.job_minutes:.1f} min, whole point {point.minutes:.1f} min"
        )
        self.stdout.write(summary(point))


def fmt(interval) -> str:
    return f"[{interval[0]:.3f}-{interval[1]:.3f}]" if interval else "(no interval: too few products)"
