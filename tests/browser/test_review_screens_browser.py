"""In a browser: a reviewer opens the auto-accept page from the queue and reads it read-only (the
thresholds and how many more blind labels each attribute needs, no accept button, which an admin
gets); a reviewer downloads every value as it stands, each with its state."""

import csv
import io

import pytest
from playwright.sync_api import expect

from review import precision
from review.actions import do_review
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_scenario
from tests.support.gold import label_blind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_reads_the_auto_accept_page_and_only_an_admin_gets_the_button(
    live_server, bob, alice, password
):
    scene = make_scenario(products=40, attributes=("Brand",), value_of=lambda i, n: (f"b{i}", 0.99))
    # 30 products labelled blind, each label the model's value
    label_blind(sorted(scene.values, key=lambda v: v.product.sku)[:30], alice)
    needed = precision.estimate(scene.run, 0.98).of("Brand").needed
    row = '#attributes tr[data-attribute="Brand"]'
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.click("#auto-accept-link")
        expect(page.locator("#read-only")).to_contain_text("Read-only")
        expect(page.locator(f"{row} .needed")).to_have_text(str(needed))
        expect(page.locator("#labelled-count")).to_have_text("30 of 40")
        page.fill("#target", "85")
        page.click("#propose")
        expect(page.locator(row)).to_have_attribute("data-offered", "0.990000")
        expect(page.locator(f"{row} .pending")).to_have_text("40")
        expect(page.locator(f"{row} .admin-call")).to_have_text("an admin accepts")
        expect(page.locator("button.auto-accept")).to_have_count(0)
    with chromium_page() as page:  # the control: the same page as the admin has the button
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/review/auto-accept/?run={scene.run.pk}&target=85")
        expect(page.locator(f"{row} button.auto-accept")).to_have_text("Accept 40")
        expect(page.locator("#read-only")).to_have_count(0)


def test_a_reviewer_exports_every_value_as_it_stands_from_the_queue(live_server, bob, password, tmp_path):
    scene = make_scenario(products=2)  # S0000, S0001: Brand and Color each
    value = {(v.product.sku, v.attribute.name): v for v in scene.values}
    do_review(value["S0000", "Brand"].pk, 0, "accept", bob)
    do_review(value["S0000", "Color"].pk, 0, "correct", bob, text="Teal")
    do_review(value["S0001", "Brand"].pk, 0, "reject", bob)
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.select_option("#export-values", "standing")
        page.select_option("#export-format", "csv")
        page.select_option("#export-shape", "long")
        with page.expect_download() as download:
            page.click("#export-button")
        assert download.value.suggested_filename == "values-as-they-stand-long.csv"
        path = tmp_path / "standing.csv"
        download.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert [(r["sku"], r["attribute"], r["value"], r["state"]) for r in rows] == [
        ("S0000", "Brand", value["S0000", "Brand"].value, "accepted"),
        ("S0000", "Color", "Teal", "corrected"),
        ("S0001", "Brand", "", "rejected"),
        ("S0001", "Color", value["S0001", "Color"].value, "pending"),
    ]
