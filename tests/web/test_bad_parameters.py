"""Every query or form parameter of every view, tried with the values that broke views before.

Issue 31 found 34 server errors from four causes: `str.isdigit()` accepting "²" and `int()` then
raising, a Decimal NaN compared, an unparsed schema version, and a header built from a name; issue
51 two more the table had not tried ("compare", "on_page"). This table sends each parameter, one
at a time, with "²", "①", "１", "NaN", "inf", "1.5", " ", a huge integer and a negative one, the other parameters of the request left valid. No answer may be a server error; a
refusal (400) must say what was wrong and change nothing stored. A value the view may take ("1.5"
as a price, "²" as a search) is taken: the table shows what each answered.

`BAD_PARAMETER_TABLE=/tmp/h/bad_parameters.md pytest tests/web/test_bad_parameters.py` writes the
table: kind, status, message, stored changes.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from tests.support.ab_factories import make_campaign, make_two_runs
from tests.support.bad_input import (
    HEADER,
    ROWS,
    changes_between,
    markdown_table,
    shown_message,
    stored_state,
)
from tests.support.catalog import latest_job, make_category, upload
from tests.support.factories import make_scenario

BAD_VALUES = {
    "superscript two": "²",
    "circled one": "①",
    "full-width one": "１",
    "NaN": "NaN",
    "infinity": "inf",
    "a fraction": "1.5",
    "a space": " ",
    "a huge integer": "9" * 30,
    "a negative integer": "-7",
}
FILTER = ("run", "catalog", "category", "attribute", "status", "sort", "min_confidence", "max_confidence")
ATTRIBUTE_FIELDS = ("name", "description", "kind", "unit", "allowed_values", "max_tokens", "required", "free")
RUN_FIELDS = ("catalog", "category", "search", "decoder", "model_dir", "batch_size", "stack", "name")


@dataclass(frozen=True)
class View:
    """One view: how to reach it, who may, a valid request, and the parameters it reads."""

    label: str
    method: str
    url: object  # (world) -> str
    params: tuple[str, ...]
    user: str | None = "bob"
    valid: object = field(default=lambda w: {})  # (world) -> dict of valid parameters
    with_file: bool = False  # a multipart form carrying a small CSV file


def attribute_form(prefix: str = "") -> dict:
    values = {"name": "Size", "description": "", "kind": "text", "unit": "", "allowed_values": ""}
    values.update(max_tokens="8", base_version="1")
    return {(f"{prefix}{k}" if k != "base_version" else k): v for k, v in values.items()}


VIEWS = [
    View(
        "product list",
        "get",
        lambda w: reverse("catalog:products"),
        ("catalog", "category", "q", "review", "page"),
    ),
    View(
        "schema export",
        "get",
        lambda w: reverse("catalog:schema_export", args=[w.category.pk]),
        ("version",),
    ),
    View(
        "new category",
        "post",
        lambda w: reverse("catalog:category_create"),
        ("name", "description"),
        user="alice",
        valid=lambda w: {"name": "Lamps", "description": ""},
    ),
    View(
        "add attribute",
        "post",
        lambda w: reverse("catalog:attribute_add", args=[w.category.pk]),
        ("base_version", *ATTRIBUTE_FIELDS),
        user="alice",
        valid=lambda w: attribute_form(),
    ),
    View(
        "edit attribute",
        "post",
        lambda w: reverse("catalog:attribute_edit", args=[w.category.pk, 0]),
        ("base_version", *(f"edit-{name}" for name in ATTRIBUTE_FIELDS)),
        user="alice",
        valid=lambda w: attribute_form("edit-"),
    ),
    View(
        "delete attribute",
        "post",
        lambda w: reverse("catalog:attribute_delete", args=[w.category.pk, 0]),
        ("base_version",),
        user="alice",
        valid=lambda w: {"base_version": "1"},
    ),
    View(
        "move attribute",
        "post",
        lambda w: reverse("catalog:attribute_move", args=[w.category.pk, 0]),
        ("base_version", "direction"),
        user="alice",
        valid=lambda w: {"base_version": "1", "direction": "down"},
    ),
    View(
        "upload",
        "post",
        lambda w: reverse("catalog:upload"),
        ("catalog", "new_catalog"),
        user="alice",
        valid=lambda w: {"new_catalog": "Shop"},
        with_file=True,
    ),
    View(
        "import mapping",
        "post",
        lambda w: reverse("catalog:import_map", args=[w.job.pk]),
        ("sku", "title", "description", "category", "fixed_category", "known_0"),
        user="alice",
        valid=lambda w: {"sku": "0", "title": "1", "description": "", "category": "2"},
    ),
    View("run list", "get", lambda w: reverse("extraction:runs"), ("page",)),
    View(
        "run page",
        "get",
        lambda w: reverse("extraction:detail", args=[w.scene.run.pk]),
        ("status", "page", "dpage"),
    ),
    View(
        "selection count",
        "get",
        lambda w: reverse("extraction:selection_count"),
        RUN_FIELDS,
        user="alice",
    ),
    View(
        "start a run",
        "post",
        lambda w: reverse("extraction:start"),
        RUN_FIELDS,
        user="alice",
        valid=lambda w: {"catalog": str(w.scene.catalog.pk), "decoder": "hpd"},
    ),
    View(
        "review queue",
        "get",
        lambda w: reverse("review:queue"),
        (*FILTER, "after", "before"),
    ),
    View(
        "review one value",
        "post",
        lambda w: reverse("review:review_value", args=[w.scene.values[0].pk]),
        ("action", "version", "value", "next"),
        valid=lambda w: {"action": "correct", "version": "0", "value": "acme"},
    ),
    View("undo", "post", lambda w: reverse("review:undo"), ("next", "on_page")),
    View(
        "bulk action",
        "post",
        lambda w: reverse("review:bulk"),
        (*FILTER, "action"),
        valid=lambda w: {"run": str(w.scene.run.pk), "action": "accept"},
    ),
    View(
        "export",
        "post",
        lambda w: reverse("review:export"),
        (*FILTER, "format", "shape"),
        valid=lambda w: {"run": str(w.scene.run.pk), "format": "csv", "shape": "wide"},
    ),
    View(
        "auto-accept page",
        "get",
        lambda w: reverse("review:auto_accept"),
        (*FILTER, "target"),
        user="alice",
    ),
    View(
        "auto-accept start",
        "post",
        lambda w: reverse("review:start_auto_accept"),
        FILTER,
        user="alice",
        valid=lambda w: {"run": str(w.scene.run.pk), "min_confidence": "0.9"},
    ),
    View("dashboard", "get", lambda w: reverse("review:dashboard"), ("run", "compare", "price", "cpu_price")),
    View("review settings page", "get", lambda w: reverse("review:settings"), ("next",)),
    View(
        "review settings",
        "post",
        lambda w: reverse("review:settings"),
        ("gpu_price_per_hour", "key_accept", "next"),
        valid=lambda w: {"gpu_price_per_hour": "2.50"},
    ),
    View(
        "blind labelling page",
        "get",
        lambda w: reverse("review:blind_label"),
        ("catalog", "category", "after"),
        valid=lambda w: {"catalog": str(w.scene.catalog.pk)},
    ),
    View(
        "blind labels",
        "post",
        lambda w: reverse("review:blind_save", args=[w.scene.products[0].pk]),
        ("catalog", "category", "schema", "attr-brand"),
        valid=lambda w: {
            "catalog": str(w.scene.catalog.pk),
            "schema": str(w.scene.schema.pk),
            **{f"attr-{a.pk}": "acme" for a in w.scene.attributes.values()},
        },
    ),
    View(
        "new campaign",
        "post",
        lambda w: reverse("evaluation:campaign_new"),
        ("name", "first_system", "second_system", "sample_size", "seed", "raters_per_item", "raters"),
        user="alice",
        valid=lambda w: {
            "name": "Check",
            "first_system": f"run:{w.runs.hpd.pk}",
            "second_system": f"run:{w.runs.ar.pk}",
            "sample_size": "4",
            "seed": "1",
            "raters_per_item": "1",
        },
    ),
    View(
        "campaign status",
        "post",
        lambda w: reverse("evaluation:campaign_status", args=[w.campaign.pk]),
        ("status",),
        user="alice",
        valid=lambda w: {"status": "closed"},
    ),
    View(
        "rating page",
        "get",
        lambda w: reverse("evaluation:rate", args=[w.campaign.pk]),
        ("change",),
        user="carol",
    ),
    View(
        "vote",
        "post",
        lambda w: reverse("evaluation:vote", args=[w.campaign.pk]),
        ("item", "choice", "comment"),
        user="carol",
        valid=lambda w: {"item": w.campaign.items.first().token, "choice": "a"},
    ),
    View("sign-in page", "get", lambda w: reverse("login"), ("next",), user=None),
    View(
        "sign in",
        "post",
        lambda w: reverse("login"),
        ("username", "password", "next"),
        user=None,
        valid=lambda w: {"username": "nobody", "password": "wrong"},
    ),
]


def parameter_name(world, name: str) -> str:
    """The blind form's fields are named by attribute id."""
    return f"attr-{world.scene.attributes['Brand'].pk}" if name == "attr-brand" else name


def send(client, view: View, world, name: str, value: str):
    data = {**view.valid(world), parameter_name(world, name): value}
    url = view.url(world)
    if view.method == "get":
        return client.get(url, data)
    if view.with_file:
        from django.core.files.uploadedfile import SimpleUploadedFile

        data["file"] = SimpleUploadedFile("products.csv", (HEADER + ROWS).encode(), content_type="text/csv")
    return client.post(url, data)


@pytest.fixture(scope="module")
def table():
    rows: list[tuple] = []
    yield rows
    target = os.environ.get("BAD_PARAMETER_TABLE")
    if target and rows:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(markdown_table(rows), encoding="utf-8")


@pytest.fixture
def world(db, alice, bob, carol):
    category = make_category("TV")
    runs = make_two_runs(n_products=4)
    campaign = make_campaign(runs, raters_per_item=1, raters=[carol])
    world = SimpleNamespace(scene=make_scenario(products=2), category=category, runs=runs, campaign=campaign)
    client = Client()
    client.force_login(alice)
    assert upload(client, HEADER + ROWS).status_code == 302
    world.job = latest_job()
    yield world
    world.job.file.delete(save=False)


@pytest.mark.parametrize("view", VIEWS, ids=[view.label for view in VIEWS])
def test_no_parameter_value_makes_a_server_error(view, world, alice, bob, carol, table):
    users = {"alice": alice, "bob": bob, "carol": carol}
    client = Client(raise_request_exception=False)
    if view.user:
        client.force_login(users[view.user])
    problems = []
    start = before = stored_state()  # each try is rolled back, so each starts from this...
    for name in view.params:
        for kind, value in BAD_VALUES.items():
            with transaction.atomic():
                if view.with_file:  # ...but for the files an accepted upload stored, which stay
                    before = stored_state()
                response = send(client, view, world, name, value)
                changes = changes_between(before, stored_state())
                transaction.set_rollback(True)
            message = shown_message(response) if response.status_code == 400 else ""
            where = f"{view.label}: {view.method.upper()} {name}={value!r}"
            table.append((where, kind, response.status_code, message, changes))
            if response.status_code >= 500:
                problems.append(f"{where} -> {response.status_code}")
            elif response.status_code == 400 and (not message or changes):
                problems.append(f"{where} -> 400 with message {message!r} and {changes} stored changes")
    for leftover in stored_state()["files"] - start["files"]:
        Path(leftover).unlink()
    assert not problems, "\n".join(problems)
