"""Catalog upkeep as an admin does it in a real browser: an attribute too small for its data resized
to its suggested size from the schema editor; an all-or-nothing import confirmed while no worker
serves imports (so it stalls), then removed after a confirmation; the catalog it left empty removed
the same way, while a catalog with products offers no such button."""

import pytest

from catalog import budgets
from catalog.models import Catalog, ImportJob, Product
from catalog.schemas import AttributeData
from tests.support.browser import chromium_page, sign_in
from tests.support.catalog import make_category
from tests.support.factories import make_catalog, make_product

LONG = "Blueberry Lemon Verbena with Chamomile and a Hint of Mint"
CSV = b"sku,title,category\nT-1,Green tea 20 bags,Tea\nT-2,,Tea\n"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_resizes_an_attribute_and_removes_a_stalled_import_and_its_empty_catalog(
    live_server, alice, password
):
    tea = make_category("Tea", AttributeData("Flavor", max_tokens=4))
    make_product(make_catalog("Full"), tea, known_values={"Flavor": LONG})
    wanted = budgets.suggested(tea, "Flavor").tokens
    with chromium_page() as page:
        base = live_server.url
        sign_in(page, base, "alice", password)

        page.goto(f"{base}/catalog/schemas/{tea.pk}/")
        assert "1 attribute is smaller than its data needs" in page.inner_text("#resize-attributes")
        page.click("#resize-attributes button")
        page.wait_for_selector("#schema-version:has-text('v2')")
        assert f"Saved as v2: Resized Flavor 4 → {wanted} tokens" in page.inner_text("#schema-editor")
        # the size on one line in characters, its tokens in the cell's tooltip
        assert f"~{wanted * budgets.CHARS_PER_TOKEN} characters" in page.inner_text("#attribute-0")
        assert page.get_attribute("#attribute-0 td.size", "title") == f"{wanted} tokens"
        assert page.locator("#resize-attributes").count() == 0

        page.goto(f"{base}/catalog/upload/")
        page.fill("#id_new_catalog", "Abandoned")
        page.set_input_files("#id_file", files=[{"name": "tea.csv", "mimeType": "text/csv", "buffer": CSV}])
        page.click("#upload-form button[type=submit]")
        page.wait_for_selector("#mapping-form")
        page.click("#mapping-form button[type=submit]")
        page.wait_for_selector("#row-errors")
        page.check("#all-or-nothing")
        page.click("#confirm-import")
        page.wait_for_selector("#remove-import")
        job = ImportJob.objects.get(original_name="tea.csv")
        assert job.all_or_nothing and job.status == ImportJob.Status.QUEUED  # no worker: it waits

        asked = []
        page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
        page.click("#remove-import button[type=submit]")
        page.wait_for_selector(".messages >> text=Removed the import of tea.csv")
        assert asked[-1].startswith("Remove this import of tea.csv?")
        assert not ImportJob.objects.filter(pk=job.pk).exists()

        assert page.locator("#catalogs tr[data-name='Full'] button").count() == 0  # it holds products
        page.click("#catalogs tr[data-name='Abandoned'] button")
        page.wait_for_selector(".messages >> text=Removed the empty catalog Abandoned.")
        assert asked[-1].startswith("Remove the empty catalog Abandoned?")
        assert page.locator("#catalogs tr[data-name='Abandoned']").count() == 0
    assert not Catalog.objects.filter(name="Abandoned").exists()
    assert list(Product.objects.values_list("catalog__name", flat=True)) == ["Full"]
