"""Row-level errors: shown in the preview with row, column and reason; skipped by the import and
listed in a formula-safe error report; good rows stored; re-imports update by SKU."""

import csv
import io

import pytest
from django.core.files.storage import default_storage
from django.urls import reverse

from catalog.imports.run import run_import
from catalog.models import ImportJob, ImportRowError, Product
from catalog.schemas import AttributeData
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload

HEADER = "sku,title,description,category,brand,screen size,colour\n"


@pytest.fixture
def tv(db):
    return make_category(
        "TV",
        AttributeData("Brand"),
        AttributeData("Screen size", kind="number", unit="in"),
        AttributeData("Colour", kind="enum", allowed_values=["black", "silver"]),
    )


BAD_ROWS = [
    # (csv line, column in the report, reason)
    (",No SKU TV,,TV,Acme,55,black", "sku", "SKU is empty"),
    ("A1,Duplicate of row 2,,TV,Acme,55,black", "sku", "duplicate SKU 'A1': row 2 has it already"),
    ("A3,,,TV,Acme,55,black", "title", "title is empty"),
    (
        "A4,Shoe,,Shoez,Acme,55,black",
        "category",
        "unknown category 'Shoez': create it on the Schemas page first, or from the import's preview",
    ),
    ("A5,No category,,,Acme,55,black", "category", "category is empty"),
    (
        "A6," + "x" * 1001 + ",,TV,Acme,55,black",
        "title",
        "title is 1001 characters long; at most 1000 are allowed",
    ),
    ("S" * 101 + ",Long SKU,,TV,Acme,55,black", "sku", "SKU is 101 characters long; at most 100 are allowed"),
    (
        "A8,Big TV,,TV,Acme,huge,black",
        "screen size",
        "'huge' is not a number (Screen size is a number attribute): write digits 0-9, at most 15 of "
        "them and 6 decimals after one point or comma, then the unit (no exponent, no hex)",
    ),
    ("A9,Pink TV,,TV,Acme,55,pink", "colour", "'pink' is not an allowed value of Colour (black, silver)"),
    ("A10,Short row,TV", "(whole row)", "has 3 fields; the header has 7"),
    (
        "A11,Wordy TV," + "w" * 20_001 + ",TV,Acme,55,black",
        "description",
        "description is 20001 characters long; at most 20000 are allowed",
    ),
]


def test_it_lists_every_bad_row_in_the_preview_with_row_column_and_reason(client_for, alice, tv):
    content = (
        HEADER + "A1,Acme TV 55,Nice,TV,Acme,55,Black\n" + "".join(line + "\n" for line, _, _ in BAD_ROWS)
    )
    client = client_for(alice)
    upload(client, content)
    job = latest_job()
    map_columns(client, job)
    response = client.get(reverse("catalog:import_preview", args=[job.pk]))
    preview = response.context["preview"]
    found = {(e.row, e.column, e.reason) for e in preview.errors}
    expected = {(row, column, reason) for row, (_, column, reason) in enumerate(BAD_ROWS, start=3)}
    assert found == expected
    assert (preview.checked_rows, preview.bad_rows) == (12, 11)
    body = response.content.decode()
    assert '<strong id="good-rows">1 good</strong>' in body
    assert '<strong id="bad-rows" class="error">11 with errors</strong>' in body
    assert "unknown category &#x27;Shoez&#x27;: create it on the Schemas page first" in body
    assert 'value="Shoez" checked> Create category <strong>Shoez</strong>' in body  # offered on the preview
    assert Product.objects.count() == 0  # the preview stores nothing

    client.post(reverse("catalog:import_start", args=[job.pk]))
    job = run_import(job.pk)
    assert (job.created_count, job.updated_count, job.skipped_count) == (1, 0, 11)
    assert list(Product.objects.values_list("sku", flat=True)) == ["A1"]
    stored = set(ImportRowError.objects.values_list("row_number", "column", "reason"))
    assert stored == expected


def test_it_imports_good_rows_skips_bad_ones_and_reports_them(client_for, alice, tv):
    content = (
        HEADER
        + "A1,Acme TV 55,Nice,TV,Acme,55 in,Black\n"
        + "A2,Globex TV 42,,TV,Globex,42,silver\n"
        + 'A3,,,TV,=HYPERLINK("http://evil"),55,black\n'
        + "A2,Again,,TV,Acme,55,black\n"
    )
    client = client_for(alice)
    job = import_inline(client, content)
    assert job.status == ImportJob.Status.DONE
    assert (job.created_count, job.updated_count, job.skipped_count) == (2, 0, 2)
    assert not default_storage.exists(job.file.name)  # the upload is removed once imported
    a1 = Product.objects.get(sku="A1")
    assert (a1.title, a1.description, a1.category.name) == ("Acme TV 55", "Nice", "TV")
    assert a1.known_values == {"Brand": "Acme", "Screen size": "55 in", "Colour": "black"}
    assert list(ImportRowError.objects.values_list("row_number", "column")) == [(4, "title"), (5, "sku")]

    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert 'id="count-created">2<' in page and 'id="count-skipped" class="error">2<' in page
    response = client.get(reverse("catalog:import_errors", args=[job.pk]))
    report = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert report[0] == [  # the sku once, in the file's own columns
        "row",
        "column",
        "reason",
        "sku",
        "title",
        "description",
        "category",
        "brand",
        "screen size",
        "colour",
    ]
    assert report[1][:4] == ["4", "title", "title is empty", "A3"]
    assert report[1][7] == '\'=HYPERLINK("http://evil")'  # a formula in the file stays text in the report
    assert report[2][:4] == ["5", "sku", "duplicate SKU 'A2': row 3 has it already", "A2"]


def test_all_or_nothing_stores_no_row_when_one_is_bad_and_lists_the_errors_by_row_and_column(
    client_for, alice, tv, django_capture_on_commit_callbacks
):
    client = client_for(alice)
    import_inline(client, HEADER + "A1,Acme TV 55,Old text,TV,Acme,,\n")  # already in the catalog
    content = HEADER + "A1,Acme TV 65,New text,TV,Acme,65,black\nA2,Globex TV 42,,TV,Globex,42,silver\n"
    bad = content + "A3,Big TV,,TV,Acme,huge,black\nA4,,,TV,Acme,55,black\n"
    upload(client, bad)
    job = latest_job()
    map_columns(client, job)
    preview = client.get(reverse("catalog:import_preview", args=[job.pk])).content.decode()
    assert 'name="all_or_nothing"' in preview and "store no row at all if any row is bad" in preview
    client.post(reverse("catalog:import_start", args=[job.pk]), {"all_or_nothing": "on"})
    with django_capture_on_commit_callbacks(execute=True):
        job = run_import(job.pk)

    assert job.status == ImportJob.Status.FAILED and job.all_or_nothing
    assert not default_storage.exists(job.file.name)  # the report holds every bad row's cells
    assert (job.created_count, job.updated_count, job.skipped_count) == (0, 0, 2)
    assert list(Product.objects.values_list("sku", "title")) == [("A1", "Acme TV 55")]  # untouched
    assert list(ImportRowError.objects.filter(job=job).values_list("row_number", "column")) == [
        (4, "screen size"),
        (5, "title"),
    ]
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert "Nothing was stored: you chose all or nothing, and 2 of 4 rows are bad" in page
    assert (
        "<td>4</td><td>A3</td><td>screen size</td>" in page and "<td>5</td><td>A4</td><td>title</td>" in page
    )
    assert client.get(reverse("catalog:import_errors", args=[job.pk])).status_code == 200

    # the same choice over a file with no bad row stores every row
    job = import_inline(client, content)  # the default: good rows stored
    assert job.status == ImportJob.Status.DONE
    upload(client, content.replace("65", "75"))
    job = latest_job()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]), {"all_or_nothing": "on"})
    job = run_import(job.pk)
    assert job.status == ImportJob.Status.DONE and (job.created_count, job.updated_count) == (0, 2)
    assert Product.objects.get(sku="A1").title == "Acme TV 75"


def test_it_updates_products_on_reimport_and_never_duplicates(client_for, alice, tv):
    client = client_for(alice)
    import_inline(client, HEADER + "A1,Acme TV 55,Old text,TV,Acme,,\nA2,Globex TV,,TV,,,\n")
    job = import_inline(
        client, "sku,title,category,colour\nA1,Acme TV 55 (2025),TV,silver\nA3,New TV,TV,\n", catalog="Shop"
    )
    assert (job.created_count, job.updated_count, job.skipped_count) == (1, 1, 0)
    assert Product.objects.filter(catalog__name="Shop").count() == 3
    a1 = Product.objects.get(sku="A1")
    assert a1.title == "Acme TV 55 (2025)"
    assert a1.description == "Old text"  # the second file has no description column: kept
    assert a1.known_values == {"Brand": "Acme", "Colour": "silver"}


def test_it_keeps_the_same_sku_apart_in_two_catalogs(client_for, alice, tv):
    client = client_for(alice)
    import_inline(client, "sku,title,category\nA1,Acme TV,TV\n", catalog="Shop A")
    import_inline(client, "sku,title,category\nA1,Acme TV,TV\n", catalog="Shop B")
    assert Product.objects.filter(sku="A1").count() == 2


def test_it_uses_one_category_for_all_rows_when_the_file_has_none(client_for, alice, tv):
    client = client_for(alice)
    upload(client, "sku,title\nA1,Acme TV\n")
    job = latest_job()
    map_columns(client, job, fixed_category=tv.pk)
    client.post(reverse("catalog:import_start", args=[job.pk]))

    run_import(job.pk)
    assert Product.objects.get(sku="A1").category == tv


def test_it_starts_an_import_only_once(client_for, alice, tv):
    client = client_for(alice)
    upload(client, "sku,title,category\nA1,Acme TV,TV\n")
    job = latest_job()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]))
    response = client.post(reverse("catalog:import_start", args=[job.pk]), follow=True)
    assert "This import has been started already." in response.content.decode()
    response = client.post(reverse("catalog:import_map", args=[job.pk]), {"sku": "1", "title": "0"})
    assert response["Location"] == reverse("catalog:import_detail", args=[job.pk])
    job.refresh_from_db()
    assert job.mapping["sku"] == 0  # the mapping of a started import no longer changes


def test_it_shows_the_upload_screens_only_to_admins(client_for, bob, tv):
    client = client_for(bob)
    assert client.get(reverse("catalog:upload")).status_code == 403
    assert upload(client, "sku,title,category\nA1,Acme TV,TV\n").status_code == 403
    assert ImportJob.objects.count() == 0
