"""`manage.py learning_curve` end to end: an AVE file imported as a catalog, decoded by a real run
worker (HPD and AR), N products reviewed from the file's gold, a real training job on a `train`
worker, and the old and new versions scored on the products nobody reviewed."""

import io
import json
import shutil

import pytest
import redis
from django.conf import settings
from django.core.management import CommandError, call_command
from django.urls import reverse

from catalog.models import Catalog
from extraction.engine import data as ave
from extraction.engine.splits import DEFAULT_DATA, OPTIONS
from review.models import GoldValue
from tests.support.factories import make_catalog, make_product, make_schema
from tests.support.training import TINY_JOB_ENV
from tests.support.workers import start_worker, stop_worker
from tools.bench.learning_curve import CurveRequest, pick_products, scoring_skus
from training.curve import curve_charts, curve_points
from training.gold import training_records
from training.models import LearningCurvePoint, TrainingJob

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def small_file(tmp_path):
    """12 OA-Mine dev records of two categories (6 each), as the file a person would pass."""
    lines = (DEFAULT_DATA / "oa-mine" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    picked, seen = [], {}
    for line in lines:
        category = json.loads(line)["category"]
        if category in ("Shoes", "Coffee") and seen.get(category, 0) < 6:
            seen[category] = seen.get(category, 0) + 1
            picked.append(line)
    path = tmp_path / "oa-mine" / "small.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(picked) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def implicit_file(tmp_path):
    """10 ImplicitAVE Food val products of Candy & Chocolate (each judged on one of the category's
    attributes, so each has unjudged ones) in a domain folder with its train.tsv (the majority
    floor's counts), beside its options file."""
    root = DEFAULT_DATA / "implicitave"
    lines = (root / "Food" / "val.tsv").read_text(encoding="utf-8").splitlines()
    picked = [line for line in lines[1:] if line.split("\t")[2] == "Candy & Chocolate"][:10]
    path = tmp_path / "implicitave" / "Food" / "val.tsv"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([lines[0], *picked]) + "\n", encoding="utf-8")
    shutil.copy(root / "Food" / "train.tsv", path.parent)
    shutil.copy(root / "options_Food.json", path.parent.parent)
    return path


@pytest.fixture
def workers(tmp_path):
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    proc = start_worker(queues="gpu,light,train", name="curve", env=TINY_JOB_ENV, log_path=tmp_path / "w.log")
    yield proc
    stop_worker(proc, timeout=15)


def test_one_point_reviews_n_trains_and_scores_only_the_products_nobody_reviewed(
    small_file, workers, settings, client, alice
):
    settings.TRAINING_MAX_STEPS = 2  # the real trainer, cut to two steps of short rows
    settings.TRAINING_BATCH_TOKENS = 128
    out = io.StringIO()
    call_command(
        "learning_curve", "--data", str(small_file), "--review", "6", "--order", "useful", stdout=out
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["order"] == "useful" and summary["n_reviewed"] == 6 and summary["n_remaining"] == 6
    assert 0 <= summary["f1_before"] <= 1 and 0 <= summary["f1_after"] <= 1 and summary["minutes"] > 0
    # the same decodes scored again as a reviewer types gold (every attribute, n/a where none)
    assert 0 <= summary["typed_before"] <= 1 and 0 <= summary["typed_after"] <= 1

    point = LearningCurvePoint.objects.get()
    catalog = point.catalog
    assert catalog.products.count() == 12 and point.data_name == "oa-mine/small.jsonl"
    # the gold of exactly the reviewed products was typed blind, a value for every attribute of
    # their schema; the other six never had gold, and the file's gold never reached the products
    blind = GoldValue.objects.filter(product__catalog=catalog)
    reviewed = set(blind.values_list("product_id", flat=True))
    assert len(reviewed) == 6 and set(blind.values_list("provenance", flat=True)) == {
        GoldValue.Provenance.BLIND
    }
    assert all(not p.known_values for p in catalog.products.all())
    records = {r.text: r for r in ave.load(small_file)}
    product = catalog.products.filter(pk__in=reviewed).select_related("category").first()
    typed = dict(blind.filter(product=product).values_list("attribute_name", "value"))
    names = set(product.category.current_schema.attributes.values_list("name", flat=True))
    assert set(typed) == names
    gold = records[product.title].gold
    assert all(typed[name] == (gold[name][0] if name in gold else "n/a") for name in names)
    # the job learned from reviewed products only (and held some of them back for its own proof)
    job = TrainingJob.objects.get(catalog=catalog)
    assert job.status == TrainingJob.Status.DONE and point.job == job
    assert set(job.trained_on) | set(job.held_back) == reviewed
    # the catalog's runs: HPD and AR for the "useful" order (it ranks by their disagreement)
    assert sorted(catalog.run_set.values_list("decoder", flat=True)) == ["ar", "hpd"]
    # the catalog's model page draws the curve of its file and lists the point
    client.force_login(alice)
    page = client.get(reverse("training:improve", args=[catalog.pk])).content.decode()
    assert 'id="learning-curve"' in page and "6 reviewed" in page
    assert f"{point.f1_after:.3f}" in page and f"{point.f1_before:.3f}" in page
    assert f"{point.typed_after:.3f}" in page and f"{point.typed_before:.3f}" in page
    assert "most useful first: after" in page  # the chart's legend: each order before and after


def test_an_implicitave_domain_is_a_catalog_of_enumerations_reviewed_on_its_judged_attributes_only(
    implicit_file, workers, settings
):
    settings.TRAINING_MAX_STEPS = 2
    settings.TRAINING_BATCH_TOKENS = 128
    out = io.StringIO()
    call_command(
        "learning_curve", "--data", str(implicit_file), "--review", "6", "--order", "random", stdout=out
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["data"] == "Food/val.tsv" and summary["n_reviewed"] == 6 and summary["n_remaining"] == 4
    # the file judges one attribute a product: the typed metric scores those same pairs
    assert summary["typed_before"] == summary["f1_before"] and summary["typed_after"] == summary["f1_after"]
    assert "majority floor on them" in out.getvalue()

    point = LearningCurvePoint.objects.get()
    catalog = point.catalog
    options = ave.load_options(implicit_file.parent.parent / "options_Food.json")
    schema = catalog.products.first().category.current_schema
    attributes = {a.name: a for a in schema.attributes.all()}
    assert set(attributes) <= {"Candy Variety", "Container", "Occasion"}
    assert len(attributes) >= 2  # so that every product has an attribute nobody judges
    assert all(a.kind == "enum" and a.allowed_values == options[a.name] for a in attributes.values())

    # each reviewed product's judged attribute is settled in review, by hand; nothing else is gold
    records = {r.text: r for r in ave.load(implicit_file)}
    gold = GoldValue.objects.filter(product__catalog=catalog)
    assert set(gold.values_list("provenance", flat=True)) <= {
        GoldValue.Provenance.ACCEPTED,
        GoldValue.Provenance.CORRECTED,
    }
    reviewed = set(gold.values_list("product_id", flat=True))
    assert len(reviewed) == 6
    for product in catalog.products.filter(pk__in=reviewed):
        judged = records[product.title].gold
        settled = dict(gold.filter(product=product).values_list("attribute_name", "value"))
        assert set(settled) == set(judged) and all(settled[name] in judged[name] for name in judged)
    # and they train as enumerations, their options listed
    job = TrainingJob.objects.get(catalog=catalog)
    assert job.status == TrainingJob.Status.DONE and set(job.trained_on) | set(job.held_back) == reviewed
    for record in training_records(catalog, job.trained_on):
        assert record[OPTIONS] == {name: options[name] for name in record["target_scores"]}


def test_a_review_count_the_file_cannot_hold_is_refused_before_anything_is_stored(small_file):
    with pytest.raises(CommandError, match="--review must be between 1 and 11"):
        call_command("learning_curve", "--data", str(small_file), "--review", "12")
    assert not Catalog.objects.exists()
    with pytest.raises(CommandError, match="no such file"):
        call_command("learning_curve", "--data", str(small_file.parent / "missing.jsonl"), "--review", "3")


def test_a_scoring_share_the_file_cannot_spare_is_refused_before_anything_is_stored(small_file):
    # 12 products, half of them set aside for scoring: at most 6 can be reviewed
    with pytest.raises(
        CommandError, match=r"between 1 and 6 \(the file has 12 products, 6 of them set aside"
    ):
        call_command("learning_curve", "--data", str(small_file), "--review", "7", "--score-share", "0.5")
    with pytest.raises(CommandError, match="--score-share must be at least 0 and below 1"):
        call_command("learning_curve", "--data", str(small_file), "--review", "3", "--score-share", "1")
    assert not Catalog.objects.exists()


def test_the_scoring_share_is_one_fixed_draw_whatever_the_point():
    skus = [f"LC-{i:05d}" for i in range(245)]
    share = scoring_skus(skus, 0.3)
    assert len(share) == 74 and share <= set(skus)
    assert scoring_skus(list(reversed(skus)), 0.3) == share  # not the order the file is read in
    assert scoring_skus(skus, 0.0) == set()  # no share: each point scores on what it left
    assert share != set(skus[:74])  # drawn over the whole file, not its first lines


def test_a_point_never_reviews_the_products_set_aside_for_scoring():
    schema = make_schema("Shoes")
    catalog = make_catalog()
    products = [make_product(catalog, schema.category) for _ in range(10)]
    never = {p.pk for p in products[:4]}
    for seed in range(5):
        request = CurveRequest(data=DEFAULT_DATA, review=6, order="random", seed=seed, score_share=0.4)
        picked = {p.pk for p in pick_products(catalog, {}, request, never=never)}
        assert len(picked) == 6 and not picked & never


def stored_point(schema, order, share=0.3, typed=(None, None)):
    """A finished learning-curve point on a catalog of its own (one product of `schema`)."""
    catalog = make_catalog()
    make_product(catalog, schema.category)
    return LearningCurvePoint.objects.create(
        catalog=catalog, data_name="oa-mine/dev.jsonl", order=order, score_share=share, n_reviewed=50,
        n_remaining=74, f1_before=0.7, f1_after=0.72, typed_before=typed[0], typed_after=typed[1],
        job_minutes=15, minutes=30,
    )  # fmt: skip


def test_points_scored_on_different_shares_are_different_curves(client, alice):
    schema = make_schema("Shoes")
    fixed_useful = stored_point(schema, "useful")
    fixed_random = stored_point(schema, "random")
    unfixed = stored_point(schema, "useful", share=0.0)
    assert set(curve_points(fixed_useful.catalog)) == {fixed_useful, fixed_random}
    assert curve_points(unfixed.catalog) == [unfixed]
    client.force_login(alice)
    page = client.get(reverse("training:improve", args=[fixed_random.catalog.pk])).content.decode()
    assert "a fixed 30% of the file that nobody reviews" in page


def test_the_page_draws_the_typed_metric_beside_the_standard_one_where_points_have_it(client, alice):
    schema = make_schema("Shoes")
    useful = stored_point(schema, "useful", typed=(0.619, 0.696))
    stored_point(schema, "random", typed=(0.619, 0.684))
    standard, typed = curve_charts(curve_points(useful.catalog))
    assert "standard metric" in standard.title and "as a reviewer types gold" in typed.title
    assert [b.label for b in typed.groups[0].bars] == ["0.619", "0.696", "0.619", "0.684"]
    client.force_login(alice)
    page = client.get(reverse("training:improve", args=[useful.catalog.pk])).content.decode()
    assert "(as a reviewer types gold)" in page and "0.696" in page

    older = stored_point(schema, "useful")
    older.data_name = "oa-mine/older.jsonl"
    older.save()
    assert [c.title for c in curve_charts(curve_points(older.catalog))] == [
        "F1 on a fixed 30% of the file that nobody reviews, oa-mine/older.jsonl (standard metric)"
    ]
