"""Whole-file checks: every bad file gets a clear message and nothing is stored."""

import pytest
from django.test import override_settings
from django.urls import reverse

from catalog.models import Catalog, ImportJob, Product
from catalog.schemas import AttributeData
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload

GOOD = "sku,title,category\nA1,Acme TV 55,TV\n"


def assert_nothing_stored():
    assert ImportJob.objects.count() == 0
    assert Catalog.objects.count() == 0
    assert Product.objects.count() == 0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("products.csv", b"", "The file is empty."),
        ("products.csv", b"\n\r\n  \n", "The file is empty."),
        ("products.xlsx", b"PK\x03\x04....", "&#x27;products.xlsx&#x27; is not a CSV file (expected .csv, .tsv or .txt)"),
        ("products.csv", b"PK\x03\x04\x14\x00\x06\x00", "This file is an Excel workbook or a ZIP archive, not CSV."),
        ("products.csv", b"%PDF-1.7\n...", "This file is a PDF document, not CSV."),
        ("products.csv", b"sku,title\n\x00\x01\x02\x03garbage", "This is a binary file, not CSV text."),
        ("products.csv", b'[{"sku": "A1"}]', "This file looks like JSON, not CSV."),
        ("products.csv", "sku,title\nA1,Caf\u00e9\n".encode("utf-16"), "The file is UTF-16 encoded"),
        ("products.csv", b"\xef\xbb\xbfsku,title\nA1,caf\xe9\n", "The file starts with a UTF-8 marker but byte 19 is not UTF-8"),
        ("products.csv", b"sku,title\nA1,bad \x81 byte\n", "byte 17 (0x81) is neither UTF-8 nor Latin-1 / Windows-1252"),
        ("products.csv", b"just one column\nA1\n", "Missing required columns: the header has one column only"),
        ("products.csv", b"sku,title,category\n", "The file has a header row but no product rows."),
    ],
)  # fmt: skip
def test_it_refuses_a_bad_file_with_a_clear_message(client_for, alice, name, content, message):
    response = upload(client_for(alice), content, name=name)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert_nothing_stored()


@override_settings(CATALOG_UPLOAD_MAX_BYTES=100)
def test_it_refuses_a_file_over_the_size_limit(client_for, alice):
    response = upload(client_for(alice), GOOD + "B2," + "x" * 200 + ",TV\n")
    assert "The file is 0.0 MB; the limit is 0 MB" in response.content.decode()
    assert_nothing_stored()


def test_it_refuses_a_large_file_before_reading_it(client_for, alice, settings):
    settings.CATALOG_UPLOAD_MAX_BYTES = 3 * 1024 * 1024
    rows = "".join(f"S{n},Product number {n} with a longer title,TV\n" for n in range(90_000))
    response = upload(client_for(alice), "sku,title,category\n" + rows)
    assert response.status_code == 413
    assert "MB; the limit is 3 MB. Split it into smaller files" in response.content.decode()
    assert_nothing_stored()


def test_it_asks_for_the_required_columns_in_the_mapping_and_stores_no_products(client_for, alice):
    make_category("TV")
    client = client_for(alice)
    upload(client, "Artikel,Bezeichnung X,Kat\nA1,Acme TV,TV\n")
    job = latest_job()
    response = map_columns(client, job)
    body = response.content.decode()
    assert response.status_code == 400
    assert "Missing required column: choose the column that holds the sku." in body
    assert "Missing required column: choose the column that holds the title." in body
    job.refresh_from_db()
    assert job.status == ImportJob.Status.UPLOADED
    assert Product.objects.count() == 0


@pytest.mark.parametrize(
    ("content", "encoding", "shown"),
    [
        ("sku,title,category\nA1,Café crème TV,TV\n".encode(), "utf-8", "UTF-8, comma-separated"),
        ("\ufeffsku;title;category\nA1;Café crème TV;TV\n".encode(), "utf-8-sig", "UTF-8 with BOM, semicolon-separated"),
        ("sku\ttitle\tcategory\nA1\tCafé crème TV\tTV\n".encode("latin-1"), "latin-1", "Latin-1, tab-separated"),
        ("sku;title;category\nA1;Café crème TV – “new”;TV\n".encode("cp1252"), "cp1252", "Windows-1252, semicolon-separated"),
    ],
)  # fmt: skip
def test_it_detects_encoding_and_delimiter(client_for, alice, content, encoding, shown):
    make_category("TV")
    client = client_for(alice)
    upload(client, content)
    job = latest_job()
    assert job.encoding == encoding
    assert job.header == ["sku", "title", "category"]
    assert shown in client.get(reverse("catalog:import_map", args=[job.pk])).content.decode()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]))
    from catalog.importer import run_import

    run_import(job.pk)
    assert Product.objects.get(sku="A1").title.startswith("Café crème TV")


def test_it_detects_the_delimiter_when_titles_hold_commas(client_for, alice):
    make_category("TV")
    content = 'sku;title;category\nA1;"Acme TV, 55 inch, black";TV\nA2;Globex TV, 42 inch;TV\n'
    job = import_inline(client_for(alice), content)
    assert job.delimiter == ";"
    assert Product.objects.get(sku="A2").title == "Globex TV, 42 inch"


def test_it_guesses_the_mapping_from_column_names(client_for, alice):
    make_category("TV", AttributeData("Brand"), AttributeData("Screen size"))
    client = client_for(alice)
    upload(
        client,
        "Product Name,Item ID,Body,Product Type,brand,screen_size,notes\nAcme TV,A1,Big,TV,Acme,55,x\n",
    )
    form = client.get(reverse("catalog:import_map", args=[latest_job().pk])).context["form"]
    guessed = {name: form[name].value() for name in ("sku", "title", "description", "category")}
    assert guessed == {"sku": "1", "title": "0", "description": "2", "category": "3"}
    assert form["known_4"].value() == "Brand"
    assert form["known_5"].value() == "Screen size"
    assert not form["known_6"].value()


def test_it_shows_the_first_values_of_each_column_on_the_mapping_page(client_for, alice):
    client = client_for(alice)
    upload(client, "sku,title,category\nA1,Acme TV,TV\nA2,Globex TV,TV\n")
    columns = client.get(reverse("catalog:import_map", args=[latest_job().pk])).context["columns"]
    assert [(c["name"], c["samples"]) for c in columns] == [
        ("sku", ["A1", "A2"]),
        ("title", ["Acme TV", "Globex TV"]),
        ("category", ["TV", "TV"]),
    ]
