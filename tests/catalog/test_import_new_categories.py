"""Rows naming a category that does not exist yet: the import's preview offers to create it (with the
attributes the file holds values for, or an empty schema), admins only, and then the rows import
(issue #52)."""

import pytest
from django.urls import reverse

from catalog.imports.run import run_import
from catalog.models import Category, ImportJob, Product
from catalog.schemas import AttributeData
from tests.support.catalog import latest_job, make_category, map_columns, upload

pytestmark = pytest.mark.django_db


@pytest.fixture
def tv(db):
    return make_category("TV", AttributeData("Brand"))


NEW = "sku,title,category,brand,flavor\nA1,Acme TV,TV,Acme,\nT1,Green tea,Tea,Twinings,Jasmine Blossom\nT2,Black tea,Tea,Lipton,\nC1,Hot cocoa,Cocoa,,\n"


def mapped(client, content: str) -> ImportJob:
    upload(client, content)
    job = latest_job()
    map_columns(client, job, known_4="Flavor")  # no attribute has that name yet: named on the mapping page
    return job


def test_the_preview_offers_to_create_the_categories_the_rows_name_and_they_import(
    client_for, alice, bob, tv
):
    client = client_for(alice)
    job = mapped(client, NEW)
    preview_url = reverse("catalog:import_preview", args=[job.pk])
    page = client.get(preview_url).content.decode()
    offer = page.split('id="new-categories"', 1)[1].split("</form>", 1)[0]
    assert "2 categories in the file do not exist yet" in offer
    assert "Create category <strong>Tea</strong>" in offer and "(2 rows; values for Brand, Flavor)" in offer
    assert "Create category <strong>Cocoa</strong>" in offer and "(1 row)" in offer
    assert "with attributes from the file" in offer and "with an empty schema" in offer

    url = reverse("catalog:import_categories", args=[job.pk])
    assert client_for(bob).post(url, {"category": ["Tea"], "schema": "attributes"}).status_code == 403
    assert not Category.objects.filter(name="Tea").exists()
    response = client_for(alice).post(url, {"category": ["Tea"], "schema": "attributes"}, follow=True)
    assert "Created Tea; their rows import now." in response.content.decode()
    tea = Category.objects.get(name="Tea")
    assert [a.name for a in tea.current_schema.attributes.all()] == ["Brand", "Flavor"]
    assert tea.current_schema.note == "Created from the import of products.csv"
    response = client.post(url, {"category": ["Cocoa"], "schema": "empty"}, follow=True)
    assert "Created Cocoa" in response.content.decode()
    assert Category.objects.get(name="Cocoa").current_schema.attributes.count() == 0
    page = client.get(preview_url).content.decode()
    assert 'id="new-categories"' not in page and '<strong id="good-rows">4 good</strong>' in page

    client.post(reverse("catalog:import_start", args=[job.pk]))
    job = run_import(job.pk)
    assert (job.created_count, job.skipped_count) == (4, 0)
    assert Product.objects.get(sku="T1").known_values == {"Brand": "Twinings", "Flavor": "Jasmine Blossom"}
    assert Product.objects.get(sku="C1").category.name == "Cocoa"


def test_only_categories_the_file_names_are_created_and_only_before_the_import_starts(client_for, alice, tv):
    client = client_for(alice)
    job = mapped(client, NEW)
    url = reverse("catalog:import_categories", args=[job.pk])
    for data, said in (
        (
            {"category": ["Tea", "Shoes"], "schema": "attributes"},
            "the file names no new category &#x27;Shoes&#x27;",
        ),
        ({"category": ["TV"], "schema": "attributes"}, "the file names no new category &#x27;TV&#x27;"),
        ({"schema": "empty"}, "tick at least one category to create"),
        ({"category": ["Tea"], "schema": "everything"}, "choose how to create the categories"),
    ):
        page = client.post(url, data, follow=True).content.decode()
        assert f"No category was created: {said}" in page, said
    assert not Category.objects.filter(name__in=["Tea", "Shoes", "Cocoa"]).exists()
    client.post(reverse("catalog:import_start", args=[job.pk]))
    page = client.post(url, {"category": ["Tea"], "schema": "empty"}, follow=True).content.decode()
    assert "This import has been started already" in page and not Category.objects.filter(name="Tea").exists()
