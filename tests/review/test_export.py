"""Exports of approved values: CSV and JSON, wide and long, formulas neutralized, large in background."""

import csv
import io
import json

import pytest
from django.test import override_settings
from django.urls import reverse

from catalog.models import Attribute
from extraction.models import ExtractedValue
from review.actions import do_review
from review.bulk import do_create_bulk_action, run_bulk_action
from review.exports import do_create_export, run_export
from review.filters import QueueFilter
from review.models import ExportJob
from tests.support.factories import make_scenario
from tests.support.pages import refusal
from tests.support.workers import start_worker, stop_worker, wait_until


def approve_all(scene, user):
    for v in scene.values:
        do_review(v.pk, 0, "accept", user)


def export(client, scene, fmt, shape, **extra):
    return client.post(
        reverse("review:export"), {"run": scene.run.pk, "format": fmt, "shape": shape, **extra}
    )


@pytest.mark.django_db
def test_it_exports_only_approved_values_as_long_csv(client_for, bob):
    scene = make_scenario(products=3)
    do_review(scene.values[0].pk, 0, "accept", bob)
    do_review(scene.values[1].pk, 0, "correct", bob, text="Crimson")
    do_review(scene.values[2].pk, 0, "reject", bob)
    response = export(client_for(bob), scene, "csv", "long")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="approved-values-long.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["sku"], r["attribute"], r["value"], r["status"]) for r in rows] == [
        ("S0000", "Brand", "brand0", "accepted"),
        ("S0000", "Color", "Crimson", "corrected"),
    ]
    assert rows[1]["model_value"] == "color0" and rows[1]["reviewed_by"] == "bob"


@pytest.mark.django_db
def test_a_cut_value_accepted_as_it_is_says_so_in_every_shape(client_for, bob):
    scene = make_scenario(products=2)
    cut_brand, cut_color = (v for v in scene.values if v.product == scene.products[0])
    ExtractedValue.objects.filter(pk__in=[cut_brand.pk, cut_color.pk]).update(truncated=True)
    do_review(cut_brand.pk, 0, "accept", bob)  # kept as the model wrote it: still cut
    do_review(cut_color.pk, 0, "correct", bob, text="Crimson")  # typed by a person: not cut
    for v in scene.values:
        if v.product == scene.products[1]:
            do_review(v.pk, 0, "accept", bob)
    client = client_for(bob)
    long = json.loads(export(client, scene, "json", "long").content)
    assert [(r["sku"], r["attribute"], r["cut"]) for r in long] == [
        ("S0000", "Brand", "cut by the token budget"),
        ("S0000", "Color", ""),
        ("S0001", "Brand", ""),
        ("S0001", "Color", ""),
    ]
    wide = list(csv.DictReader(io.StringIO(export(client, scene, "csv", "wide").content.decode())))
    assert [r["cut by the token budget"] for r in wide] == ["Brand", ""]
    assert [r["cut"] for r in json.loads(export(client, scene, "json", "wide").content)] == [["Brand"], []]


@pytest.mark.django_db
def test_it_exports_wide_csv_and_json_in_both_shapes(client_for, bob):
    scene = make_scenario(products=2)
    approve_all(scene, bob)
    client = client_for(bob)
    wide = list(csv.reader(io.StringIO(export(client, scene, "csv", "wide").content.decode())))
    assert wide[0] == [
        "catalog",
        "sku",
        "title",
        "category",
        "Brand",
        "Brand (raw)",
        "Color",
        "Color (raw)",
        "cut by the token budget",
    ]
    assert wide[1][1:] == [
        "S0000",
        "Item 0 brand0 color0",
        "Shoes",
        "brand0",
        "brand0",
        "color0",
        "color0",
        "",
    ]
    assert len(wide) == 3
    data = json.loads(export(client, scene, "json", "wide").content)
    assert data[1]["sku"] == "S0001" and data[1]["values"] == {"Brand": "brand1", "Color": "color1"}
    assert data[1]["raw"] == {"Brand": "brand1", "Color": "color1"}
    data = json.loads(export(client, scene, "json", "long").content)
    assert len(data) == 4 and {d["attribute"] for d in data} == {"Brand", "Color"}


@pytest.mark.django_db
def test_cells_a_spreadsheet_would_read_as_formulas_are_neutralized(client_for, bob):
    dangerous = ['=HYPERLINK("http://evil")', "+1+1", "-2", "@SUM(A1)", "\tTab", "\rCR"]
    scene = make_scenario(
        products=len(dangerous), attributes=("Brand",), value_of=lambda i, n: (f"v{i}", 0.5)
    )
    for v, text in zip(scene.values, dangerous, strict=True):
        do_review(v.pk, 0, "correct", bob, text=text)
    # Leading tab/CR are trimmed by the correction itself; the title carries them to the export too.
    scene.products[0].__class__.objects.filter(pk=scene.products[0].pk).update(title="=cmd|' /C calc'!A0")
    scene.values[4].__class__.objects.filter(pk=scene.values[4].pk).update(
        value="\t=1+2", raw_text="=2+3"
    )  # the model's own text, normalized and raw
    for shape in ("long", "wide"):
        body = export(client_for(bob), scene, "csv", shape).content.decode()
        cells = [c for row in csv.reader(io.StringIO(body)) for c in row]
        assert (
            '\'=HYPERLINK("http://evil")' in cells
            and "'+1+1" in cells
            and "'-2" in cells
            and "'@SUM(A1)" in cells
        )
        assert "'=cmd|' /C calc'!A0" in cells and "'=2+3" in cells
        assert shape == "wide" or "'\t=1+2" in cells
        assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), shape


@pytest.mark.django_db
def test_attribute_names_in_the_wide_header_are_neutralized_too(client_for, bob):
    scene = make_scenario(products=1, attributes=("=SUM(1+1)", "@cmd", "Brand"))
    approve_all(scene, bob)
    body = export(client_for(bob), scene, "csv", "wide").content.decode()
    header = next(csv.reader(io.StringIO(body)))
    assert header == [
        "catalog", "sku", "title", "category",
        "'=SUM(1+1)", "'=SUM(1+1) (raw)", "'@cmd", "'@cmd (raw)", "Brand", "Brand (raw)",
        "cut by the token budget",
    ]  # fmt: skip
    assert not ExportJob.objects.exists()  # an export within the request stores nothing


@pytest.mark.django_db
def test_exports_carry_the_normalized_value_beside_the_raw_text(client_for, bob):
    scene = make_scenario(products=2, attributes=("Screen size",), value_of=lambda i, n: ("55 in", 0.5))
    Attribute.objects.filter(pk=scene.attributes["Screen size"].pk).update(kind="number", unit="in")
    ExtractedValue.objects.filter(run=scene.run).update(raw_text='55"')  # what the model wrote
    do_review(scene.values[0].pk, 0, "accept", bob)
    do_review(scene.values[1].pk, 0, "correct", bob, text="140 cm")
    client = client_for(bob)
    rows = list(csv.DictReader(io.StringIO(export(client, scene, "csv", "long").content.decode())))
    assert [(r["value"], r["status"], r["model_value"], r["model_raw"]) for r in rows] == [
        ("55 in", "accepted", "55 in", '55"'),
        ("55.118 in", "corrected", "55 in", '55"'),  # the correction, in the schema's unit
    ]
    wide = list(csv.DictReader(io.StringIO(export(client, scene, "csv", "wide").content.decode())))
    assert [(r["Screen size"], r["Screen size (raw)"]) for r in wide] == [
        ("55 in", '55"'),
        ("55.118 in", '55"'),
    ]
    data = json.loads(export(client, scene, "json", "long").content)
    assert [(d["model_value"], d["model_raw"]) for d in data] == [("55 in", '55"')] * 2


@pytest.mark.django_db
def test_it_refuses_an_unknown_format(client_for, bob):
    scene = make_scenario(products=1)
    response = export(client_for(bob), scene, "xlsx", "long")
    assert refusal(response) == "format: 'xlsx' is not one of csv, json"
    assert not ExportJob.objects.exists()


@override_settings(REVIEW_EXPORT_INLINE_LIMIT=5)
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_large_export_runs_in_the_background_with_a_download_link(client_for, bob, tmp_path):
    scene = make_scenario(products=10)
    approve_all(scene, bob)
    worker = start_worker(queues="light", name="review-export", log_path=tmp_path / "worker.log")
    try:
        client = client_for(bob)
        response = export(client, scene, "csv", "wide")
        job = ExportJob.objects.get()
        assert response["Location"] == reverse("review:export_status", args=[job.pk])
        wait_until(lambda: ExportJob.objects.get(pk=job.pk).status == "done", timeout=90, what="the export")
        page = client.get(response["Location"]).content.decode()
        download_url = reverse("review:export_download", args=[job.pk])
        assert download_url in page and "20 of 20" in page
        download = client.get(download_url)
        body = b"".join(download.streaming_content).decode()
        assert len(list(csv.reader(io.StringIO(body)))) == 11
        assert f"approved-values-wide-{job.pk}.csv" in download["Content-Disposition"]
    finally:
        stop_worker(worker)


@pytest.mark.django_db
def test_an_unfinished_export_has_no_download(client_for, bob):
    job = ExportJob.objects.create(created_by=bob, format="csv", shape="long", filters={})
    assert client_for(bob).get(reverse("review:export_download", args=[job.pk])).status_code == 404


# --- every value as it stands, with its state ------------------------------------------------------


def values_in_every_state(bob):
    """One product, five values: accepted, corrected, n/a, rejected, pending; plus one auto-accepted."""
    scene = make_scenario(products=1, attributes=("Brand", "Color", "Size", "Fit", "Sole", "Lace"))
    value = {v.attribute.name: v for v in scene.values}
    do_review(value["Brand"].pk, 0, "accept", bob)
    do_review(value["Color"].pk, 0, "correct", bob, text="Teal")
    do_review(value["Size"].pk, 0, "set_na", bob)
    do_review(value["Fit"].pk, 0, "reject", bob)
    auto = QueueFilter(run=scene.run.pk, attribute="Lace", status="pending", min_confidence=0.0)
    run_bulk_action(do_create_bulk_action(auto, "accept", bob).pk)
    return scene, value


@pytest.mark.django_db
def test_it_exports_every_value_as_it_stands_with_its_state_as_long_csv(client_for, bob):
    scene, value = values_in_every_state(bob)
    response = export(client_for(bob), scene, "csv", "long", values="standing")
    assert response["Content-Disposition"] == 'attachment; filename="values-as-they-stand-long.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["attribute"], r["value"], r["status"], r["state"], r["model_value"]) for r in rows] == [
        ("Brand", value["Brand"].value, "accepted", "accepted", value["Brand"].value),
        ("Color", "Teal", "corrected", "corrected", value["Color"].value),
        ("Size", "n/a", "corrected", "n/a", value["Size"].value),
        ("Fit", "", "rejected", "rejected", value["Fit"].value),  # rejected: no value stands
        ("Sole", value["Sole"].value, "pending", "pending", value["Sole"].value),
        ("Lace", value["Lace"].value, "accepted", "auto-accepted", value["Lace"].value),
    ]
    # the control: the approved export, from the same values, still takes only the approved ones
    approved = export(client_for(bob), scene, "csv", "long")
    assert [r["attribute"] for r in csv.DictReader(io.StringIO(approved.content.decode()))] == [
        "Brand",
        "Color",
        "Size",
        "Lace",
    ]


@pytest.mark.django_db
def test_the_wide_export_as_it_stands_puts_each_state_beside_its_value(client_for, bob):
    scene, value = values_in_every_state(bob)
    client = client_for(bob)
    wide = list(
        csv.DictReader(io.StringIO(export(client, scene, "csv", "wide", values="standing").content.decode()))
    )
    assert len(wide) == 1
    assert (wide[0]["Fit"], wide[0]["Fit (raw)"], wide[0]["Fit (state)"]) == (
        "",
        value["Fit"].raw_text,
        "rejected",
    )
    assert (wide[0]["Sole"], wide[0]["Sole (state)"]) == (value["Sole"].value, "pending")
    data = json.loads(export(client, scene, "json", "wide", values="standing").content)
    assert data[0]["states"] == {
        "Brand": "accepted",
        "Color": "corrected",
        "Size": "n/a",
        "Fit": "rejected",
        "Sole": "pending",
        "Lace": "auto-accepted",
    }


@pytest.mark.django_db
def test_pending_values_a_spreadsheet_would_run_are_neutralized_in_the_export_as_it_stands(client_for, bob):
    scene = make_scenario(products=1, attributes=("Brand",), value_of=lambda i, n: ('=HYPERLINK("x")', 0.5))
    for shape in ("long", "wide"):
        body = export(client_for(bob), scene, "csv", shape, values="standing").content.decode()
        cells = [c for row in csv.reader(io.StringIO(body)) for c in row]
        assert '\'=HYPERLINK("x")' in cells and "pending" in cells, shape
        assert not any(c.startswith(("=", "+", "-", "@", "\t", "\r")) for c in cells), shape


@pytest.mark.django_db
def test_it_refuses_an_unknown_choice_of_values(client_for, bob):
    scene = make_scenario(products=1)
    response = export(client_for(bob), scene, "csv", "long", values="everything")
    assert refusal(response) == "values: 'everything' is not one of approved, standing"
    assert not ExportJob.objects.exists()


@pytest.mark.django_db
def test_a_background_export_as_it_stands_keeps_its_choice(bob):
    scene, _ = values_in_every_state(bob)
    job = do_create_export(QueueFilter(run=scene.run.pk), "csv", "long", bob, values="standing")
    assert job.total == 6
    job = run_export(job.pk)
    assert job.filename == f"values-as-they-stand-long-{job.pk}.csv"
    rows = list(csv.DictReader(io.StringIO(job.file.open("rb").read().decode())))
    assert [r["state"] for r in rows] == [
        "accepted",
        "corrected",
        "n/a",
        "rejected",
        "pending",
        "auto-accepted",
    ]
