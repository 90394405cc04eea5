"""The catalog admin's first hour, in a real browser: sign in, create a schema, upload a CSV with
one bad row by drag and drop, map the columns, see the row error in the preview, import the good
rows on a real worker, find the products, download the error report naming the bad row."""

import csv
import io

import pytest

from catalog.models import Product
from tests.support.browser import chromium_page, sign_in
from tests.support.workers import start_worker, stop_worker

CSV = (
    "Item ID,Name,Type,Maker\n"
    "TV-1,Acme Vision 55 inch 4K TV,TV,Acme\n"
    "TV-2,Globex Slim 42 inch TV,TV,Globex\n"
    "TV-3,,TV,Initech\n"
)

DROP_FILE = """([name, text]) => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([text], name, {type: "text/csv"}));
  const zone = document.getElementById("dropzone");
  zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: transfer, bubbles: true}));
  zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
}"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_admin_creates_a_schema_uploads_a_catalog_and_gets_the_error_report(live_server, alice, password):
    worker = start_worker(queues="light", name="catalog-browser")
    try:
        with chromium_page() as page:
            base = live_server.url
            sign_in(page, base, "alice", password)

            page.click("nav >> text=Schemas")
            page.fill("#new-category #id_name", "TV")
            page.click("#new-category button[type=submit]")
            page.wait_for_selector("#schema-version:has-text('v1')")
            page.evaluate("window.__samePage = true")  # lost if the page reloads
            page.fill("#add-attribute #id_name", "Brand")
            page.fill("#add-attribute #id_description", "The maker of the TV")
            page.fill("#add-attribute #id_max_tokens", "6")
            page.click("#add-attribute button[type=submit]")
            page.wait_for_selector("#schema-version:has-text('v2')")
            assert page.evaluate("window.__samePage") is True  # htmx swapped the editor only
            assert page.inner_text("#attributes tbody tr:first-child td:nth-child(2)") == "Brand"
            page.fill("#add-attribute #id_name", "Screen size")
            page.select_option("#add-attribute #id_kind", "number")
            page.fill("#add-attribute #id_unit", "in")
            page.click("#add-attribute button[type=submit]")
            page.wait_for_selector("#schema-version:has-text('v3')")
            page.click("#attribute-1 button[title='Move up']")  # reorder: Screen size first
            page.wait_for_selector("#schema-version:has-text('v4')")
            assert page.inner_text("#attributes tbody tr:first-child td:nth-child(2)") == "Screen size"
            page.click("#attribute-0 >> text=Edit")  # inline edit, then delete, still the same page
            page.fill("#attribute-0 #id_edit-description", "Diagonal of the screen")
            page.click("#attribute-0 >> text=Save")
            page.wait_for_selector("#schema-version:has-text('v5')")
            assert "Diagonal of the screen" in page.inner_text("#attribute-0")
            page.once("dialog", lambda dialog: dialog.accept())
            page.click("#attribute-0 >> text=Delete")
            page.wait_for_selector("#schema-version:has-text('v6')")
            assert page.inner_text("#attributes tbody tr:first-child td:nth-child(2)") == "Brand"
            assert page.evaluate("window.__samePage") is True

            page.click("nav >> text=Upload")
            page.wait_for_url("**/catalog/upload/")  # waits for "load": the deferred drop handler is attached
            page.fill("#id_new_catalog", "Shop")
            page.evaluate(DROP_FILE, ["tvs.csv", CSV])
            assert page.inner_text("#drop-file") == "tvs.csv"
            page.click("#upload-form button[type=submit]")

            page.wait_for_selector("#mapping-form")
            assert "UTF-8, comma-separated" in page.inner_text("#detected-format")
            assert page.eval_on_selector("#id_sku", "el => el.selectedOptions[0].text") == "Item ID"
            page.select_option("#id_title", label="Name")
            page.select_option("#id_category", label="Type")
            page.fill("#id_known_3", "Brand")  # the Maker column holds the Brand attribute
            page.click("#mapping-form button[type=submit]")

            page.wait_for_selector("#row-errors")
            error_row = page.inner_text("#row-errors tbody tr")
            assert (
                "4" in error_row
                and "TV-3" in error_row
                and "Name" in error_row
                and "title is empty" in error_row
            )
            assert page.inner_text("#good-rows") == "2 good"
            page.click("#confirm-import")

            page.wait_for_selector("#import-summary", timeout=90_000)  # the progress bar polls until done
            assert page.inner_text("#count-created") == "2"
            assert page.inner_text("#count-skipped") == "1"

            with page.expect_download() as download_info:
                page.click("#error-report")
            report = download_info.value.path().read_text(encoding="utf-8")
            rows = list(csv.reader(io.StringIO(report)))
            # row, column, reason, then the file's own columns (so the fixed row can be uploaded again)
            assert rows[1][:4] == ["4", "Name", "title is empty", "TV-3"] and rows[1].count("TV-3") == 1

            page.click("nav >> text=Products")
            page.fill("#id_q", "globex")
            page.wait_for_selector("#result-count:has-text('1 product matching')")
            page.click("#products >> text=Globex Slim 42 inch TV")
            page.wait_for_selector("#document")
            assert "Globex" in page.inner_text("#product-attributes")
        assert Product.objects.get(sku="TV-1").known_values == {"Brand": "Acme"}
        assert not Product.objects.filter(sku="TV-3").exists()
    finally:
        stop_worker(worker)
