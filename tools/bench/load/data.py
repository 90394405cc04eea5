"""The review load benchmark's data: a catalog with one finished run's values, its reviewers, and the
check afterwards that every write the simulated reviewers saw succeed is stored once with its history.

`manage.py bench_load_seed` builds the data, `manage.py bench_load_check` compares the database with
the simulated users' records; `python -m tools.bench.load` (`make bench-load`) runs both around
gunicorn and locust against a database of its own.
"""

import itertools
import random
from collections import Counter
from dataclasses import asdict, dataclass

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, User
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from accounts.roles import REVIEWER
from catalog.models import Attribute, Catalog, Category, Product, SchemaVersion
from extraction.models import ExtractedValue, Run, WorkItem
from review.models import GoldValue, ValueEvent
from review.opening import open_reviews

BENCH_CATALOG = "bench-load"
BENCH_CATEGORY = "Bench load headphones"
BENCH_ATTRIBUTES = ("Brand", "Color", "Connectivity", "Fit")
BENCH_USER_PREFIX = "bench-reviewer-"
_BRANDS = ["Sony", "Bose", "Sennheiser", "JBL", "Jabra", "Beyerdynamic", "AKG", "Audio-Technica"]
_COLORS = ["black", "white", "silver", "blue", "red", "green"]
_CONNECTIVITY = ["bluetooth", "wired", "usb-c", "2.4 GHz wireless"]
_FITS = ["over-ear", "on-ear", "in-ear", "earbuds"]
SEED = 15  # the same catalog and confidences every time
BENCH_DATABASE_SUFFIX = "bench"


def refuse_unless_bench_database() -> None:
    """The benchmark writes only a database whose name ends in "bench", never a dev database."""
    name = connection.settings_dict["NAME"]
    if not name.endswith(BENCH_DATABASE_SUFFIX):
        raise CommandError(
            f"database {name!r} is not a benchmark database (its name must end in "
            f"{BENCH_DATABASE_SUFFIX!r}): run it through `make bench-load`"
        )


def bench_username(n: int) -> str:
    return f"{BENCH_USER_PREFIX}{n:03d}"


def _titles():
    yield from itertools.product(_BRANDS, _COLORS, _CONNECTIVITY, _FITS)


@dataclass
class Seeded:
    run: int
    products: int
    values: int
    users: int


def seed(products: int, users: int, password: str) -> Seeded:
    """A fresh catalog of `products` products, a finished HPD run with one value per attribute each,
    and `users` reviewers sharing `password` (hashed once: PBKDF2 costs a second a user)."""
    rng = random.Random(SEED)
    with transaction.atomic():
        Catalog.objects.filter(name=BENCH_CATALOG).delete()  # its products, runs' values cascade
        Run.objects.filter(name=BENCH_CATALOG).delete()
        category, _ = Category.objects.get_or_create(name=BENCH_CATEGORY)
        schema = category.current_schema
        if schema is None:
            schema = SchemaVersion.objects.create(category=category, version=1, note="load benchmark")
            Attribute.objects.bulk_create(
                Attribute(schema=schema, position=i, name=name, max_tokens=6)
                for i, name in enumerate(BENCH_ATTRIBUTES)
            )
        attributes = list(schema.attributes.order_by("position"))
        catalog = Catalog.objects.create(name=BENCH_CATALOG)
        rows, said = [], []
        for i, (brand, color, link, fit) in zip(range(products), itertools.cycle(_titles()), strict=False):
            said.append({"Brand": brand, "Color": color, "Connectivity": link, "Fit": fit})
            rows.append(
                Product(
                    catalog=catalog,
                    category=category,
                    sku=f"LOAD-{i:06d}",
                    title=f"{brand} {fit} headphones {color} {link} model {i}",
                )
            )
        made = Product.objects.bulk_create(rows, batch_size=5000)
        now = timezone.now()
        run = Run.objects.create(
            name=BENCH_CATALOG,
            decoder=Run.Decoder.HPD,
            status=Run.Status.DONE,
            catalog=catalog,
            model_dir="models/slotwise-ave",
            model_name="load benchmark (no decoding)",
            total=len(made),
            done=len(made),
            started_at=now,
            finished_at=now,
        )
        run.schema_versions.add(schema)
        WorkItem.objects.bulk_create(
            (
                WorkItem(run=run, product=p, schema=schema, status=WorkItem.Status.DONE, writes=1)
                for p in made
            ),
            batch_size=5000,
        )
        values = []
        for product, truth in zip(made, said, strict=True):
            for attribute in attributes:
                text = truth.get(attribute.name, "n/a")
                values.append(
                    ExtractedValue(
                        run=run,
                        product=product,
                        attribute=attribute,
                        raw_text=text,
                        value=text,
                        confidence=round(rng.random(), 4),
                    )
                )
        open_reviews(ExtractedValue.objects.bulk_create(values, batch_size=5000))
        group, _ = Group.objects.get_or_create(name=REVIEWER)
        User.objects.filter(username__startswith=BENCH_USER_PREFIX).delete()
        hashed = make_password(password)
        reviewers = User.objects.bulk_create(
            User(username=bench_username(n), password=hashed) for n in range(1, users + 1)
        )
        group.user_set.add(*reviewers)
    return Seeded(run=run.id, products=len(made), values=len(values), users=len(reviewers))


@dataclass
class Check:
    """The simulated users' successful writes against what PostgreSQL holds."""

    writes_recorded: int
    values_reviewed: int
    lost: int  # a write the user saw succeed whose value, history or gold is not as written
    doubled: int  # a value with more than one history row from the benchmark, or gold twice
    unrecorded: int  # history rows no simulated user saw succeed (a write that answered an error)
    problems: list

    def as_dict(self) -> dict:
        return asdict(self)


def check(records: list[dict]) -> Check:
    """records: one per write a simulated user saw succeed: {user, value, action, text}.

    Each value must now be in the state that write left (accepted / corrected with the text), with
    exactly one history row of that user and action, and exactly one gold row holding the value.
    """
    problems = []
    by_value = {}
    for record in records:
        if record["value"] in by_value:
            problems.append(f"value {record['value']} was written twice by the benchmark")
        by_value[record["value"]] = record
    values = ExtractedValue.objects.select_related("review").in_bulk(list(by_value))
    events = Counter(
        ValueEvent.objects.filter(value_id__in=by_value).values_list("value_id", "actor__username", "action")
    )
    bench_events = ValueEvent.objects.filter(actor__username__startswith=BENCH_USER_PREFIX)
    gold = dict(
        GoldValue.objects.filter(source_id__in=by_value)
        .values_list("source_id")
        .annotate(n=Count("id"))
        .values_list("source_id", "n")
    )
    gold_values = dict(GoldValue.objects.filter(source_id__in=by_value).values_list("source_id", "value"))
    lost = doubled = 0
    for value_id, record in by_value.items():
        value = values.get(value_id)
        want_status = "accepted" if record["action"] == "accept" else "corrected"
        want_text = value.value if value is not None and record["action"] == "accept" else record["text"]
        key = (value_id, record["user"], record["action"])
        if value is None or value.review.status != want_status or value.review.reviewed_value != want_text:
            lost += 1
            problems.append(f"value {value_id}: not stored as {record['user']} left it ({want_status})")
        elif events[key] == 0 or gold.get(value_id, 0) == 0 or gold_values.get(value_id) != want_text:
            lost += 1
            problems.append(f"value {value_id}: its history or gold is missing")
        if events[key] > 1 or gold.get(value_id, 0) > 1:
            doubled += 1
            problems.append(
                f"value {value_id}: {events[key]} history rows, {gold.get(value_id, 0)} gold rows"
            )
    recorded_keys = {(v, r["user"], r["action"]) for v, r in by_value.items()}
    unrecorded = sum(
        1
        for key in bench_events.values_list("value_id", "actor__username", "action")
        if key not in recorded_keys
    )
    if unrecorded:
        problems.append(f"{unrecorded} history rows of benchmark users match no write they saw succeed")
    return Check(
        writes_recorded=len(records),
        values_reviewed=len(by_value),
        lost=lost,
        doubled=doubled,
        unrecorded=unrecorded,
        problems=problems[:20],
    )
