"""`manage.py learning_curve`: what N reviewed products teach the model, measured on the rest.

One point of the learning curve, end to end through the product:
1. the AVE file becomes a catalog (its categories' schemas, its products without their gold); an
   ImplicitAVE domain file (DOMAIN/val.tsv) too, its attributes enumerations of its options file;
2. the catalog is decoded by the run workers (HPD, and AR beside it for the "useful" order, which
   ranks by HPD/AR disagreement);
3. N products are "reviewed": their gold is typed blind from the file as a reviewer types it (a
   value for every attribute, "n/a" where the file gives none), picked in the review queue's
   "most useful" order or at random; a file that judges some attributes of a product only
   (ImplicitAVE) is reviewed as a reviewer settles those: the run's value of each judged attribute
   accepted or corrected in review, the others left alone (neither trained nor scored);
4. the training job of the "Improve the model" page runs on a `train` worker;
5. the old and the new version decode the products nobody reviewed (or, with a score share, a
   fixed share of the file set aside before any product is picked: the same products for every
   order, N and seed, so that the points of one file compare); both are scored on the file's gold there, twice (bootstrap 95% intervals over products): by the standard metric (the pairs the
   file judges) and as a reviewer types gold (every attribute of the schema: the file's value, or
   "n/a" where it has none, as the reviewed products were typed and as the job's own proof scores).

Nothing here is fed by what it scores: the remaining products' gold is never typed, trained on or
shown to the model. Needs the run and training workers of `make dev` (or of a cluster).
"""

import csv
import json
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from catalog.imports.map import guess_mapping
from catalog.imports.read import inspect_file
from catalog.imports.write import import_file
from catalog.models import Catalog, Product
from catalog.schemas import do_import_schema
from extraction.engine import data as ave
from extraction.models import ExtractedValue, Run
from extraction.services import RunRequest, do_start_run
from review.actions import do_review
from review.blind import do_blind_label
from review.filters import QueueFilter
from review.models import ValueEvent
from review.useful_order import candidates
from review.usefulness import rank_products
from training.models import LearningCurvePoint, TrainingJob
from training.services import JobRequest, start_training_job, wait_for_job

ORDERS = ("useful", "random")
NA = "n/a"
# The seed of the scoring share's draw: its own, not --seed's, so that every point of a file (any
# order, N or seed) is scored on the same products.
SCORE_SEED = 0


class CurveError(RuntimeError):
    """A step of the point could not be done; the message says which and why."""


@dataclass(frozen=True)
class CurveRequest:
    data: Path
    review: int
    order: str = "useful"
    seed: int = 0
    minutes: float | None = None  # None: the training job's default (settings.TRAINING_MINUTES)
    timeout: float = 4 * 3600  # seconds to wait for each run and for the job
    # 0: score on every product nobody reviewed; > 0: on this fixed share of the file, never reviewed
    score_share: float = 0.0


def run_point(request: CurveRequest, say=lambda text: None) -> LearningCurvePoint:
    started = time.monotonic()
    products = ave.load(request.data)
    if not 0 <= request.score_share < 1:
        raise CurveError(f"--score-share must be at least 0 and below 1, not {request.score_share}")
    by_sku = skus_of(products)
    set_aside = scoring_skus(list(by_sku), request.score_share)
    reviewable = len(products) - (len(set_aside) if set_aside else 1)
    if not 0 < request.review <= reviewable:
        kept = f", {len(set_aside)} of them set aside for scoring" if set_aside else ""
        raise CurveError(
            f"--review must be between 1 and {reviewable} (the file has {len(products)} products{kept})"
        )
    catalog = import_catalog(request, by_sku)
    say(f"imported {len(by_sku)} products into catalog {catalog.pk} ({catalog.name})")
    runs = decode_catalog(catalog, request, say)
    scored = catalog.products.filter(sku__in=set_aside)
    reviewed = pick_products(catalog, runs, request, never=set(scored.values_list("pk", flat=True)))
    every = ave.judges_every_attribute(request.data)
    if every:
        type_gold(reviewed, by_sku)
        say(f"typed the gold of {len(reviewed)} products blind ({request.order} order)")
    else:
        settled = settle_judged(reviewed, by_sku, runs["hpd"])
        say(f"settled {settled} judged values of {len(reviewed)} products in review ({request.order} order)")
    job = train(catalog, request, say)
    if not set_aside:
        scored = catalog.products.exclude(pk__in=[p.pk for p in reviewed])
    remaining = list(scored.select_related("category"))
    old_dir, new_dir = version_dirs(job)
    before = score_products(old_dir, remaining, by_sku, every)
    after = score_products(new_dir, remaining, by_sku, every)
    where = "set aside for scoring" if set_aside else "nobody reviewed"
    say(f"scored both versions on the {len(remaining)} products {where}")
    floor = ave.majority_floor(request.data, [by_sku[p.sku] for p in remaining])
    if floor is not None:
        say(
            f"majority floor on them (each attribute's most common value in {floor['source']}): {floor['accuracy']:.3f}"
        )
    return LearningCurvePoint.objects.create(
        catalog=catalog,
        data_name=data_name(request.data),
        order=request.order,
        seed=request.seed,
        score_share=request.score_share,
        n_reviewed=len(reviewed),
        n_remaining=len(remaining),
        f1_before=before["standard"]["f1"],
        f1_after=after["standard"]["f1"],
        interval_before=before["standard"]["interval"],
        interval_after=after["standard"]["interval"],
        typed_before=before["typed"]["f1"],
        typed_after=after["typed"]["f1"],
        typed_interval_before=before["typed"]["interval"],
        typed_interval_after=after["typed"]["interval"],
        job=job,
        job_minutes=(job.finished_at - job.started_at).total_seconds() / 60,
        minutes=(time.monotonic() - started) / 60,
    )


def data_name(path: Path) -> str:
    """ "oa-mine/dev.jsonl": the file named by its folder, so the points of one file share a curve."""
    return f"{path.parent.name}/{path.name}"


def skus_of(products: list[ave.Product]) -> dict[str, ave.Product]:
    """The SKU each record of the file is imported under (its line in the file)."""
    return {f"LC-{i:05d}": p for i, p in enumerate(products)}


def scoring_skus(skus: list[str], share: float) -> set[str]:
    """The fixed share of the file every point with this share is scored on and never reviews: a
    draw of its own seed (SCORE_SEED), whatever the point's order, N and --seed. Empty for share 0
    (each point then scores on the products it left unreviewed)."""
    if share <= 0:
        return set()
    return set(random.Random(SCORE_SEED).sample(sorted(skus), round(share * len(skus))))


def import_catalog(request: CurveRequest, by_sku: dict[str, ave.Product]) -> Catalog:
    """A new catalog of the file's products (titles only: no gold goes in), under schemas named
    after the file so that no catalog's own category changes."""
    prefix = f"{data_name(request.data)} "
    shared = f" scored on {request.score_share:.0%}" if request.score_share else ""
    name = f"Learning curve {data_name(request.data)} {request.order} N={request.review} seed {request.seed}{shared}"
    if Catalog.objects.filter(name=name).exists():
        raise CurveError(f"catalog {name!r} exists already: delete it first, or pick another --seed")
    products = list(by_sku.values())
    options = enumerations(request.data, products)
    with tempfile.TemporaryDirectory() as tmp, transaction.atomic():
        for category, attributes in sorted(ave.schemas(products).items()):
            do_import_schema(schema_payload(prefix + category, attributes, options), user=None)
        catalog = Catalog.objects.create(name=name, description=f"Products of {request.data}, gold withheld.")
        path = Path(tmp) / "products.csv"
        with path.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["sku", "title", "category"])
            writer.writerows([sku, p.text, prefix + p.category] for sku, p in by_sku.items())
        file_format = inspect_file(path, path.name)
        counts = import_file(path, file_format, guess_mapping(file_format.header, []), catalog.pk)
    if counts.created != len(by_sku):
        raise CurveError(f"the import wrote {counts.created} of {len(by_sku)} products")
    return catalog


def enumerations(path: Path, products: list[ave.Product]) -> dict[str, list[str]]:
    """attribute -> allowed values: an ImplicitAVE domain's options file (the one evaluate decodes
    it with); none for the JSON-lines sets, whose values are spans of the title."""
    if ave.judges_every_attribute(path):
        return {}
    chosen = ave.options_for(path, products)
    if chosen is None:
        raise CurveError(f"{path}: no options_*.json of its values in {Path(path).resolve().parent.parent}")
    return ave.load_options(chosen)


def schema_payload(category: str, attributes: list[str], options: dict[str, list[str]]) -> dict:
    """A schema file (catalog/schemas.py's format): an attribute with options is an enumeration."""
    return {
        "format": "slotwise-schema/1",
        "category": category,
        "attributes": [
            {"name": name, "kind": "enum", "allowed_values": options[name]}
            if name in options
            else {"name": name, "kind": "text"}
            for name in attributes
        ],
    }


def decode_catalog(catalog: Catalog, request: CurveRequest, say) -> dict[str, Run]:
    """{decoder: finished run}: HPD, and AR beside it when the order needs their disagreement."""
    decoder = "both" if request.order == "useful" else "hpd"
    runs = do_start_run(RunRequest(decoder=decoder, catalog=catalog, name=catalog.name))
    deadline = time.monotonic() + request.timeout
    for run in runs:
        while Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE_STATUSES).exists():
            if time.monotonic() > deadline:
                raise CurveError(
                    f"run {run.pk} did not finish in {request.timeout:.0f} s: are the workers up?"
                )
            time.sleep(2)
        run.refresh_from_db()
        if run.status != Run.Status.DONE:
            raise CurveError(
                f"run {run.pk} ({run.decoder}) ended {run.status}: {run.error or 'see its page'}"
            )
        say(f"run {run.pk} ({run.decoder}) decoded {run.total} products")
    return {run.decoder: run for run in runs}


def pick_products(
    catalog: Catalog, runs: dict[str, Run], request: CurveRequest, never: set[int] = frozenset()
) -> list[Product]:
    """The N products to review, none of `never` (the scoring share): the review queue's "most
    useful" ranking of the HPD run's values (AR as its partner), or a seeded random draw."""
    if request.order == "random":
        ids = sorted(set(catalog.products.values_list("pk", flat=True)) - never)
        chosen = random.Random(request.seed).sample(ids, request.review)
    else:
        found, _ = candidates(QueueFilter(run=runs["hpd"].pk), runs.get("ar"))
        chosen = rank_products(c for c in found if c.product not in never)[: request.review]
    return list(Product.objects.filter(pk__in=chosen).select_related("category"))


def as_typed(product: Product, record: ave.Product, every: bool = True) -> dict[str, list[str]]:
    """The product's gold as a reviewer types it: for every attribute of its schema, the file's
    accepted forms, or "n/a" where the file has none (its annotators tagged every value a title
    holds). every=False (a file that judges some attributes only): the judged ones alone."""
    if not every:
        return dict(record.gold)
    names = product.category.current_schema.attributes.values_list("name", flat=True)
    return {name: record.gold.get(name) or [NA] for name in names}


def type_gold(products: list[Product], by_sku: dict[str, ave.Product]) -> None:
    """Each product's gold typed blind: the first accepted form of each attribute, as_typed's."""
    for product in products:
        typed = {name: forms[0] for name, forms in as_typed(product, by_sku[product.sku]).items()}
        do_blind_label(product, product.category.current_schema.pk, typed, user=None)


def settle_judged(products: list[Product], by_sku: dict[str, ave.Product], run: Run) -> int:
    """Each product's judged attributes settled in review as a reviewer who knows the file's gold
    settles them: the run's value accepted where it is a gold form, else corrected to the first;
    the product's other attributes are left pending. The number of values settled."""
    settled = 0
    sku_of = {p.pk: p.sku for p in products}
    values = ExtractedValue.objects.filter(run=run, product__in=products).select_related(
        "attribute", "review"
    )
    for value in values.order_by("product_id", "attribute__position"):
        forms = by_sku[sku_of[value.product_id]].gold.get(value.attribute.name)
        if not forms:
            continue
        if value.value in forms:
            do_review(value.pk, value.review.version, ValueEvent.Action.ACCEPT, None)
        else:
            do_review(value.pk, value.review.version, ValueEvent.Action.CORRECT, None, text=forms[0])
        settled += 1
    return settled


def train(catalog: Catalog, request: CurveRequest, say) -> TrainingJob:
    job = start_training_job(JobRequest(catalog, minutes=request.minutes, seed=request.seed))
    say(f"training job {job.pk}: {job.counts['trained']['products']} products to train on, "
        f"{job.counts['held_back']['products']} held back")  # fmt: skip
    job = wait_for_job(job.pk, timeout=request.timeout)
    if job.status != TrainingJob.Status.DONE:
        raise CurveError(f"training job {job.pk} ended {job.status}: {job.error or 'still running'}")
    took = (job.finished_at - job.started_at).total_seconds() / 60
    say(
        f"training job {job.pk} done: {job.step} steps, {job.train_seconds / 60:.1f} min of training, {took:.1f} min in all"
    )
    return job


def version_dirs(job: TrainingJob) -> tuple[str, str]:
    """(the version the job started from, the version it made), as local model directories."""
    from registry import cache
    from runner.decoding import engine_model_dir

    old = engine_model_dir("") if job.parent.is_shipped else str(cache.local_dir(job.parent.pk))
    return str(old), str(cache.local_dir(job.result.pk))


def score_products(
    model_dir: str, products: list[Product], by_sku: dict[str, ave.Product], every: bool = True
) -> dict:
    """{"standard": ..., "typed": ...}: the training job's own scorer (runner/training/evaluation.py)
    on one decode of these products, against the file's gold on the pairs it judges (the standard
    metric) and against the gold as a reviewer types it (as_typed; the same pairs where the file
    judges some attributes only), each with its interval."""
    from django.conf import settings

    from runner.training.evaluation import decode, score

    predictions = decode(model_dir, products, settings.SLOTWISE_DEVICE)
    categories = {p.pk: p.category.name for p in products}
    judged = {p.pk: by_sku[p.sku].gold for p in products}
    typed = {p.pk: as_typed(p, by_sku[p.sku], every) for p in products}
    return {
        "standard": score(predictions, judged, categories),
        "typed": score(predictions, typed, categories),
    }


def summary(point: LearningCurvePoint) -> str:
    """The closing JSON line a script reads."""
    return json.dumps(
        {
            "data": point.data_name,
            "order": point.order,
            "seed": point.seed,
            "n_reviewed": point.n_reviewed,
            "n_remaining": point.n_remaining,
            "score_share": point.score_share,
            "f1_before": round(point.f1_before, 4),
            "f1_after": round(point.f1_after, 4),
            "interval_before": point.interval_before,
            "interval_after": point.interval_after,
            "typed_before": round(point.typed_before, 4),
            "typed_after": round(point.typed_after, 4),
            "minutes": round(point.minutes, 1),
            "job_minutes": round(point.job_minutes, 1),
        }
    )
