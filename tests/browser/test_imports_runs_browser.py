"""The screens of issue #52 point 3 and issue #47 point 6, in Chromium: a schema file imported with
sizes that fit its data, one line each; an upload naming a new category created from its preview and
imported on a real worker; an all-or-nothing refusal that leaves no empty catalog; the run page's
slots too small (one line per attribute, linked to its schemas) and its batch progress moving while
a batch decodes; the queue's line on why cut values come first."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.management.commands.load_demo_catalog import DEMO_DIR
from catalog.models import Catalog, Category, Product
from catalog.schemas import AttributeData
from extraction.models import ExtractedValue, Run
from extraction.services import RunRequest, do_start_run
from review.opening import open_reviews
from runner.leases import ItemOutcome, lease_batch, record_results
from runner.loop import set_phase
from tests.support.browser import chromium_page, sign_in
from tests.support.catalog import make_category
from tests.support.factories import make_catalog, make_product, make_scenario
from tests.support.workers import start_worker, stop_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LONG = "Blueberry Lemon Verbena with Chamomile and a Hint of Mint"
NEW_CATEGORY_CSV = "sku,title,category,brand,flavor\nT1,Twinings Jasmine infusion,Infusion,Twinings,Jasmine\nT2,Lipton mint infusion,Infusion,Lipton,\n"


def upload_csv(page, base: str, catalog: str, name: str, content: str) -> None:
    page.goto(f"{base}/catalog/upload/")
    page.fill("#id_new_catalog", catalog)
    page.set_input_files("#id_file", {"name": name, "mimeType": "text/csv", "buffer": content.encode()})
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#mapping-form")


def test_schemas_fit_their_data_and_an_upload_creates_its_new_category(
    live_server, alice, password, tmp_path
):
    worker = start_worker(queues="light", name="imports-runs-browser", log_path=tmp_path / "worker.log")
    try:
        with chromium_page() as page:
            base = live_server.url
            sign_in(page, base, "alice", password)
            # the demo's schema file, imported as a catalog team would: no attribute starts too small
            page.goto(f"{base}/catalog/schemas/")
            page.set_input_files("#import-schema input[type=file]", str(DEMO_DIR / "schemas.json"))
            page.click("#import-schema button[type=submit]")
            page.wait_for_selector("#categories >> text=Coffee")
            page.click("#categories >> text=Coffee")
            page.wait_for_selector("#attributes")
            assert (
                page.locator(".size-warning").count() == 0 and page.locator("#resize-attributes").count() == 0
            )
            cells = page.locator("#attributes td.size")
            assert cells.count() == len(
                next(
                    s
                    for s in json.loads((DEMO_DIR / "schemas.json").read_text())
                    if s["category"] == "Coffee"
                )["attributes"]
            )
            for i in range(cells.count()):  # one short line each, tokens in the tooltip
                text = cells.nth(i).inner_text()
                assert text.startswith("~") and text.endswith(" characters") and "\n" not in text, text
                assert cells.nth(i).get_attribute("title").endswith(" tokens")

            # an upload whose rows name a category nobody made yet
            upload_csv(page, base, "Teas", "teas.csv", NEW_CATEGORY_CSV)
            page.fill("#id_known_4", "Flavor")
            page.click("#mapping-form button[type=submit]")
            page.wait_for_selector("#new-categories")
            assert page.inner_text("#bad-rows") == "2 with errors"
            assert "Create category Infusion" in page.inner_text("#new-categories")  # the demo has Tea
            page.check("#new-categories input[value=attributes]")
            page.click("#create-categories")
            page.wait_for_selector(".messages >> text=Created Infusion; their rows import now.")
            assert page.locator("#new-categories").count() == 0
            assert page.inner_text("#good-rows") == "2 good"
            page.click("#confirm-import")
            page.wait_for_selector("#import-summary", timeout=90_000)
            assert page.inner_text("#count-created") == "2"
        infusion = Category.objects.get(name="Infusion")
        assert [a.name for a in infusion.current_schema.attributes.all()] == ["Brand", "Flavor"]
        assert Product.objects.get(sku="T1").known_values == {"Brand": "Twinings", "Flavor": "Jasmine"}
    finally:
        stop_worker(worker)


def test_an_all_or_nothing_refusal_leaves_no_empty_catalog(live_server, alice, password, tmp_path):
    make_category("TV", AttributeData("Brand"))
    worker = start_worker(queues="light", name="refusal-browser", log_path=tmp_path / "worker.log")
    try:
        with chromium_page() as page:
            base = live_server.url
            sign_in(page, base, "alice", password)
            upload_csv(page, base, "Fresh", "tvs.csv", "sku,title,category\nA1,Acme TV,TV\nA2,,TV\n")
            page.click("#mapping-form button[type=submit]")
            page.wait_for_selector("#confirm-import")
            page.check("#all-or-nothing")
            page.click("#confirm-import")
            page.wait_for_selector("#import-failed", timeout=90_000)
            assert "The catalog Fresh held nothing else and was removed" in page.inner_text("#import-failed")
            assert "1 bad row of 2; stored: none" in page.inner_text("#import-refused-counts")
            page.goto(f"{base}/catalog/imports/")
            assert "nothing stored (1 bad row)" in page.inner_text("#imports")
            assert page.locator('#catalogs tr[data-name="Fresh"]').count() == 0
        assert not Catalog.objects.filter(name="Fresh").exists()
    finally:
        stop_worker(worker)


def test_the_run_page_says_what_to_resize_and_shows_the_batch_moving(live_server, alice, password):
    catalog = make_catalog()
    categories = [
        make_category(name, AttributeData("Flavor", max_tokens=4), AttributeData("Brand", max_tokens=40))
        for name in ("Tea", "Coffee")
    ]
    for category in categories:
        for _ in range(3):
            make_product(catalog, category, known_values={"Flavor": LONG})
    run = do_start_run(RunRequest(decoder="ar", catalog=catalog, batch_size=3))[0]
    first = lease_batch(run.id, "w1", 3)
    record_results(run.id, "w1", [ItemOutcome(item.id, {}) for item in first])
    lease_batch(run.id, "w1", 3)
    set_phase(run.id, Run.Phase.DECODING)
    now = timezone.now()  # 40 s into a batch after 3 products took 5 s: it runs long
    Run.objects.filter(pk=run.pk).update(
        started_at=now - timedelta(seconds=45), phase_since=now - timedelta(seconds=40)
    )
    with chromium_page() as page:
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/runs/{run.id}/")
        lines = page.locator("#run-sizes li")
        assert lines.count() == 1 and lines.inner_text() == "Flavor: resize it on the schema of Coffee, Tea"
        assert "tokens" not in page.inner_text("#run-sizes")
        assert page.inner_text("#run-eta") == "estimating: this batch runs long"
        batch = page.inner_text("#run-batch")
        assert batch.startswith("Batch 2 of 2: 3 products, decoding for 4")
        # the line moves with the page's one-second poll: a person sees the worker is alive
        page.wait_for_function(
            "(first) => document.getElementById('run-batch').innerText !== first", arg=batch, timeout=10_000
        )
        page.click("#run-sizes >> text=Coffee")
        page.wait_for_selector("#schema-editor")
        assert "Coffee" in page.inner_text("#schema-editor h1")
        assert page.locator("#resize-attributes").count() == 1  # where the resize button is


def test_the_queue_says_why_cut_values_come_first(live_server, bob, password):
    scene = make_scenario(products=3)
    cut = max(scene.values, key=lambda v: v.confidence)
    ExtractedValue.objects.filter(pk=cut.pk).update(truncated=True)
    open_reviews(ExtractedValue.objects.filter(run=scene.run))
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.wait_for_selector("#cut-first")
        assert page.inner_text("#cut-first").startswith("✂ Cut values come first")
        first = page.locator("#value-list form.vrow").first
        assert first.get_attribute("id") == f"value-{cut.pk}"
