"""A reviewer goes through ten values with the keyboard only, then exports what they approved; an
enumeration is corrected from its list of values by keyboard too."""

import csv
import io

import pytest

from catalog.models import Attribute
from extraction.models import ExtractedValue
from review.actions import do_review
from review.models import ValueEvent
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_review_choices, make_scenario

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_reviews_ten_values_by_keyboard_and_exports_them(live_server, bob, password, tmp_path):
    scene = make_scenario(products=6)  # 12 values, one page
    order = list(ExtractedValue.objects.filter(run=scene.run).order_by("confidence", "id"))
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")

        def active_is(value):
            page.wait_for_selector(f"#value-{value.pk}.active")

        def press(key, then_status=None, value=None):
            page.keyboard.press(key)
            if then_status:
                page.wait_for_selector(f"#value-{value.pk}.status-{then_status}")

        active_is(order[0])
        assert page.inner_text("#doc-panel mark") == order[0].value  # the span, highlighted beside
        press("a", "accepted", order[0])
        active_is(order[1])
        press("e")
        page.keyboard.type("Nike Air")
        press("Enter", "corrected", order[1])
        active_is(order[2])
        press("n", "corrected", order[2])
        press("r", "rejected", order[3])
        press("a", "accepted", order[4])
        active_is(order[5])
        press("u", "pending", order[4])  # undo puts the last change back and returns to that value
        active_is(order[4])
        press("k")
        active_is(order[3])
        press("j")
        press("a", "accepted", order[4])
        for value in order[5:10]:
            active_is(value)
            press("a", "accepted", value)
        # The edit box took Escape without saving anything.
        active_is(order[10])
        press("e")
        page.keyboard.type("discard me")
        press("Escape")
        assert page.locator(f"#value-{order[10].pk} .edit-box").is_hidden()

        with page.expect_download() as download_info:
            page.keyboard.press("x")
        path = tmp_path / "export.csv"
        download_info.value.save_as(path)

    statuses = dict(ExtractedValue.objects.filter(run=scene.run).values_list("pk", "review__status"))
    assert [statuses[v.pk] for v in order] == (
        ["accepted", "corrected", "corrected", "rejected"] + ["accepted"] * 6 + ["pending", "pending"]
    )
    assert ExtractedValue.objects.get(pk=order[1].pk).review.reviewed_value == "Nike Air"
    assert ExtractedValue.objects.get(pk=order[2].pk).review.reviewed_value == "n/a"
    assert ValueEvent.objects.filter(actor=bob, action="undo").count() == 1
    rows = list(csv.reader(io.StringIO(path.read_text())))
    header, body = rows[0], rows[1:]
    assert header[:4] == ["catalog", "sku", "title", "category"]
    # each attribute's approved value, beside it the model's raw text ("<name> (raw)")
    value_columns = [i for i, name in enumerate(header) if i >= 4 and not name.endswith(" (raw)")]
    exported = [row[i] for row in body for i in value_columns if row[i]]
    assert {"Nike Air", "n/a"} <= set(exported)
    assert order[3].value not in exported  # rejected values are not exported
    approved = [v for v in order[:10] if statuses[v.pk] in ("accepted", "corrected")]
    assert len(approved) == 9
    assert len(exported) == 9


def test_filters_refresh_the_queue_in_place_and_follow_the_run(live_server, bob, password):
    shoes = make_scenario(products=3, attributes=("Brand", "Color"))
    coffee = make_scenario(products=2, category="Coffee", attributes=("Roast",))
    rows = "document.querySelectorAll('#value-list .vrow').length"
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={shoes.run.pk}")
        page.select_option("#f-attribute", "Color")
        page.wait_for_function(f"{rows} === 3")
        assert "attribute=Color" in page.url  # the filter is in the address, to share or reload
        page.select_option("#f-attribute", "")
        page.wait_for_function(f"{rows} === 6")
        page.select_option("#f-run", str(coffee.run.pk))
        page.wait_for_function(f"{rows} === 2")
        # The other run's attributes replace the choices; the first row is ready for the keys.
        assert page.eval_on_selector_all("#f-attribute option", "els => els.map(e => e.value)") == [
            "",
            "Roast",
        ]
        # The cursor lands once htmx has settled the new rows (a few ms after they appear).
        page.wait_for_function("document.querySelector('#value-list .vrow').classList.contains('active')")


def test_a_conflict_shows_the_current_value_in_the_row_and_a_second_try_works(
    live_server, bob, alice, password
):
    from review.actions import do_review

    scene = make_scenario(products=2)
    first = ExtractedValue.objects.filter(run=scene.run).order_by("confidence", "id").first()
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.wait_for_selector(f"#value-{first.pk}.active")
        do_review(first.pk, 0, "correct", alice, text="Changed by Alice")  # while bob looks at it
        page.keyboard.press("a")
        message = page.wait_for_selector(f"#value-{first.pk} .row-message.conflict")
        assert (
            "alice changed this value" in message.inner_text() and "Changed by Alice" in message.inner_text()
        )
        page.wait_for_selector(f"#value-{first.pk}.active")  # still on it, nothing moved on
        page.keyboard.press("Escape")
        page.keyboard.press("a")
        page.wait_for_selector(f"#value-{first.pk}.status-accepted")
    first.refresh_from_db()
    assert (first.review.status, first.review.reviewed_by, first.review.version) == ("accepted", bob, 2)


def test_a_long_unbroken_value_wraps_instead_of_squeezing_the_product_column(live_server, bob, password):
    """QA: a random stand-in's 60-letter values crushed product titles to one word per line."""
    long_value = "reen" * 40

    def value_of(i, name):
        return (long_value if name == "Brand" else f"{name.lower()}{i}", 0.5)

    scene = make_scenario(products=2, value_of=value_of)
    with chromium_page() as page:
        page.set_viewport_size({"width": 1280, "height": 900})
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.wait_for_selector(".vrow")
        widths = page.evaluate(
            """() => {
              const row = document.querySelector('.vrow');
              const width = sel => row.querySelector(sel).getBoundingClientRect().width;
              return {product: width('.c-product'), value: width('.c-value'), list: row.getBoundingClientRect().width,
                      page: document.documentElement.scrollWidth, viewport: window.innerWidth};
            }"""
        )
    assert widths["page"] <= widths["viewport"]  # no sideways scrolling
    assert widths["product"] >= widths["list"] * 0.2  # about its 2/8.2 share, not one word wide
    assert widths["value"] <= widths["list"] * 0.3


def test_a_reviewer_corrects_an_enumeration_from_its_list_by_keyboard(live_server, bob, password):
    scene = make_scenario(
        products=3,
        attributes=("Gender",),
        value_of=lambda i, name: (["Men", "Women", "Men"][i], 0.2 + i / 10),
    )
    Attribute.objects.filter(pk=scene.attributes["Gender"].pk).update(
        kind="enum", allowed_values=["Men", "Women", "Unisex"]
    )
    order = list(ExtractedValue.objects.filter(run=scene.run).order_by("confidence", "id"))
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")

        def edit(keys, value):
            page.wait_for_selector(f"#value-{value.pk}.active")
            page.keyboard.press("e")
            select = page.locator(f"#value-{value.pk} .edit-box select")
            assert select.evaluate("el => el === document.activeElement")  # the list has the keys
            for key in keys:
                page.keyboard.press(key)
            page.keyboard.press("Enter")
            page.wait_for_selector(f"#value-{value.pk}.status-corrected")

        edit(["ArrowDown"], order[0])  # Men -> the next value in the list
        edit(["u"], order[1])  # typing picks the value that starts so
        edit(["n"], order[2])  # n/a is in the list too
    reviewed = [ExtractedValue.objects.get(pk=v.pk).review.reviewed_value for v in order]
    assert reviewed == ["Women", "Unisex", "n/a"]


def bulk_accept_in_queue(page, live_server, password, run) -> None:
    """bob signs in, opens the run's queue and accepts everything it shows (confirming the dialog)."""
    page.on("dialog", lambda dialog: dialog.accept())
    sign_in(page, live_server.url, "bob", password)
    page.goto(f"{live_server.url}/review/queue/?run={run.pk}")
    page.click("#bulk-accept")


def test_u_after_a_bulk_accept_takes_the_bulk_accept_back_and_says_so(live_server, bob, password):
    scene = make_scenario(products=30)  # 60 values over three pages
    order = list(ExtractedValue.objects.filter(run=scene.run).order_by("confidence", "id"))
    older = order[-1]  # bob corrected a value on the last page before
    do_review(older.pk, 0, "correct", bob, text="Older fix")
    with chromium_page() as page:
        bulk_accept_in_queue(page, live_server, password, scene.run)
        page.wait_for_selector(".msg-success:has-text('Accepted 59 values')")
        page.wait_for_selector(f"#value-{order[0].pk}.status-accepted")
        page.keyboard.press("u")
        page.wait_for_selector(".msg-success:has-text('Undone your bulk accept')")
        assert "59 values back as they were" in page.inner_text(".messages")
        page.wait_for_selector(f"#value-{order[0].pk}.status-pending")
        page.keyboard.press("u")  # the next undo reaches the older change on another page: it says so
        page.wait_for_selector("#review-status.show")
        said = page.inner_text("#review-status")
        assert said.startswith("Undone your correction of") and older.product.sku in said
        assert said.endswith("It is not on this page.")
    statuses = set(ExtractedValue.objects.filter(run=scene.run).values_list("review__status", flat=True))
    assert statuses == {"pending"}


def test_choosing_the_useful_order_changes_what_comes_first(live_server, bob, password):
    scene = make_review_choices()
    first_row = "#queue-body form.vrow >> nth=0"
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        assert page.get_attribute(first_row, "id") == f"value-{scene.values['bob1'].pk}"  # lowest confidence
        page.select_option("#f-sort", "useful")
        page.wait_for_function(
            "id => document.querySelector('#queue-body form.vrow').id === id",
            arg=f"value-{scene.values['zest'].pk}",
        )
        rows = page.eval_on_selector_all("#queue-body form.vrow", "forms => forms.map(f => f.id)")
        assert rows[:3] == [f"value-{scene.values[n].pk}" for n in ("zest", "bob1", "acme")]
        assert "sort=useful" in page.url  # the order is in the address, so a reload keeps it


def test_the_undo_button_on_a_bulk_accepts_banner_takes_it_back(live_server, bob, password):
    scene = make_scenario(products=3)
    values = ExtractedValue.objects.filter(run=scene.run)
    with chromium_page() as page:
        bulk_accept_in_queue(page, live_server, password, scene.run)
        page.wait_for_selector(".msg-success:has-text('Accepted 6 values')")
        assert set(values.values_list("review__status", flat=True)) == {"accepted"}
        page.click(".messages #undo-bulk")
        page.wait_for_selector(".msg-success:has-text('Undone your bulk accept')")
        assert page.locator("#queue-body .vrow.status-pending").count() == 6
        assert page.locator("#queue-body .vrow.status-accepted").count() == 0
        assert page.locator("#undo-bulk").count() == 0  # the undo's own message offers no second undo
    assert set(values.values_list("review__status", flat=True)) == {"pending"}
    assert ValueEvent.objects.filter(actor=bob, action="undo").count() == 6


def test_the_bulk_banners_undo_button_goes_once_a_value_changed_after_it(live_server, bob, password):
    scene = make_scenario(products=3)
    first = ExtractedValue.objects.filter(run=scene.run).order_by("confidence", "id").first()
    with chromium_page() as page:
        bulk_accept_in_queue(page, live_server, password, scene.run)
        page.wait_for_selector(".messages #undo-bulk")
        page.wait_for_selector(f"#value-{first.pk}.active")
        page.keyboard.press("r")  # its undo would now take back this rejection, not the bulk accept
        page.wait_for_selector(f"#value-{first.pk}.status-rejected")
        page.wait_for_selector("#undo-bulk", state="detached")
        assert "Accepted 6 values" in page.inner_text(".messages")  # the banner itself stays
