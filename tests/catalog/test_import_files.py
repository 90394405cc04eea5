"""Whole-file handling of good files: encoding, delimiter, mapping guesses and samples.

Bad files (each kind with its message, nothing stored) are in the one table of test_bad_input.py.
"""

import pytest
from django.urls import reverse

from catalog.models import ImportJob, Product
from catalog.schemas import AttributeData
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload


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
    from catalog.imports.run import run_import

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


def test_it_keeps_line_breaks_inside_quoted_fields(client_for, alice):
    """A quoted field over several lines is no unclosed quote when the row has the header's width."""
    make_category("TV")
    content = (
        'sku,title,description,category\nA1,Acme TV,"Line one\nLine two\r\nLine three",TV\nA2,Globex,,TV\n'
    )
    job = import_inline(client_for(alice), content)
    assert (job.created_count, job.skipped_count) == (2, 0)
    assert Product.objects.get(sku="A1").description == "Line one\nLine two\r\nLine three"
