"""What an import leaves behind: one that stored nothing leaves no empty catalog and does not count
its bad rows as if others were stored (issue #52)."""

import pytest
from django.urls import reverse

from catalog.imports.run import run_import
from catalog.models import Catalog, ImportJob, Product
from catalog.schemas import AttributeData
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload

pytestmark = pytest.mark.django_db
HEADER = "sku,title,category,brand\n"
BAD = HEADER + "A1,Acme TV,TV,Acme\nA2,,TV,Acme\n"  # row 3 has no title


@pytest.fixture
def tv(db):
    return make_category("TV", AttributeData("Brand"))


def confirmed(client, content: str, catalog: str, **start) -> ImportJob:
    upload(client, content, catalog=catalog)
    job = latest_job()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]), start)
    return run_import(job.pk)


def test_an_all_or_nothing_import_that_stored_nothing_removes_the_catalog_it_made(client_for, alice, tv):
    client = client_for(alice)
    job = confirmed(client, BAD, "Fresh", all_or_nothing="on")
    assert job.status == ImportJob.Status.FAILED and job.catalog is None and job.catalog_name == "Fresh"
    assert not Catalog.objects.filter(name="Fresh").exists() and Product.objects.count() == 0
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert "The catalog Fresh held nothing else and was removed" in page
    assert "Import of products.csv into Fresh (removed: it held nothing)" in page
    refused = page.split('id="import-refused-counts">', 1)[1].split("</p>", 1)[0]
    assert refused == "<strong>1</strong> bad row of 2; stored: none (the good rows were not stored either)."
    assert client.get(reverse("catalog:import_errors", args=[job.pk])).status_code == 200  # report kept
    listing = client.get(reverse("catalog:imports")).content.decode()
    row = listing.split(f'href="{reverse("catalog:import_detail", args=[job.pk])}"', 1)[1].split("</tr>", 1)[
        0
    ]
    assert "nothing stored (1 bad row)" in row and "<td>0</td>" not in row  # no "skipped" beside 0 stored
    assert 'data-name="Fresh"' not in listing  # no empty catalog left in the list


def test_a_catalog_that_holds_anything_else_stays(client_for, alice, tv):
    """Negative control: products, or another import of the catalog, keep it."""
    client = client_for(alice)
    import_inline(client, HEADER + "A1,Acme TV,TV,Acme\n", catalog="Kept")
    job = confirmed(client, BAD, "Kept", all_or_nothing="on")
    assert job.status == ImportJob.Status.FAILED and job.catalog.name == "Kept"
    assert "was removed" not in job.message
    upload(client, BAD, catalog="Waiting")  # an upload not mapped yet holds the second catalog
    job = confirmed(client, BAD, "Waiting", all_or_nothing="on")
    assert job.catalog is not None and Catalog.objects.filter(name="Waiting").exists()


def test_an_import_whose_every_row_is_bad_says_nothing_was_stored(client_for, alice, tv):
    client = client_for(alice)
    job = confirmed(client, HEADER + "A1,,TV,Acme\nA2,,TV,Acme\n", "Empty")
    assert job.status == ImportJob.Status.DONE and (job.created_count, job.skipped_count) == (0, 2)
    assert job.catalog is None and not Catalog.objects.filter(name="Empty").exists()
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert "Nothing was stored: every row of the file is bad" in page
    assert "Browse the catalog" not in page  # nothing to browse
    # negative control: an import that stored rows says no such thing
    job = confirmed(client, BAD, "Shop")
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert job.created_count == 1 and "Nothing was stored" not in page and "Browse the catalog" in page
