"""A reviewer labels three products blind with the keyboard only, then reads the run's F1 on them."""

import pytest

from extraction.engine import metric
from review.blind import draw
from review.models import GoldValue
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_scenario

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_reviewer_labels_three_products_blind_by_keyboard_and_sees_the_f1(live_server, bob, password):
    scene = make_scenario(products=3)  # the run says brand<i> / color<i> for product i
    first, second, third = sorted(scene.products, key=lambda p: draw(p.pk))  # the seeded sample's order
    i1, i2, i3 = (scene.products.index(p) for p in (first, second, third))  # what the run says of each
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/")
        page.click("nav >> text=Label blind")
        page.select_option("#b-catalog", str(scene.catalog.pk))
        page.click("#blind-start button[type=submit]")

        def on_product(product, labelled):
            page.wait_for_selector(f'#blind-product[data-product="{product.pk}"]')
            assert page.get_attribute("#blind-progress", "data-labelled") == str(labelled)
            assert page.evaluate("document.activeElement.name") == f"attr-{scene.attributes['Brand'].pk}"

        on_product(first, 0)
        page.keyboard.type(f"brand{i1}")
        page.keyboard.press("Enter")  # to the next field
        page.keyboard.press("Alt+n")  # n/a, and on to the save button
        assert page.evaluate("document.activeElement.id") == "blind-save"
        page.keyboard.press("Control+Enter")  # save, next product

        on_product(second, 1)
        page.keyboard.type(f"brand{i2}")
        page.keyboard.press("Tab")
        page.keyboard.type(f"color{i2}")
        page.keyboard.press("Control+Enter")

        on_product(third, 2)
        page.keyboard.type("Other")
        page.keyboard.press("Enter")
        page.keyboard.type(f"color{i3}")
        page.keyboard.press("Enter")  # last field: to the save button ...
        page.keyboard.press("Enter")  # ... which saves
        page.wait_for_selector("#blind-done")
        assert page.get_attribute("#blind-progress", "data-labelled") == "3"

        page.goto(f"{live_server.url}/review/dashboard/?run={scene.run.pk}")
        cell = page.locator(f'td.f1[data-run="{scene.run.pk}"]')
        shown_f1 = float(cell.get_attribute("data-f1"))
        no_interval = cell.locator(".no-interval").inner_text()  # 3 products: too few for an interval
        used = page.locator(f'td.gold-used[data-run="{scene.run.pk}"]')
        used_count, used_text = used.get_attribute("data-used"), used.inner_text()

    labels = {
        (first.pk, "Brand"): f"brand{i1}",
        (first.pk, "Color"): "n/a",
        (second.pk, "Brand"): f"brand{i2}",
        (second.pk, "Color"): f"color{i2}",
        (third.pk, "Brand"): "Other",
        (third.pk, "Color"): f"color{i3}",
    }
    stored = GoldValue.objects.values_list(
        "product_id", "attribute_name", "value", "provenance", "approved_by"
    )
    assert set(stored) == {(p, a, v, "blind", bob.pk) for (p, a), v in labels.items()}
    # VC 4 (brand0, brand1, color1, color2), VW 1 (Other), NV 1 (color0 against n/a): F1 = 8/11.
    expected = metric.evaluate(
        ("Shoes", v.attribute.name, v.value, [labels[(v.product_id, v.attribute.name)]])
        for v in scene.run.values.select_related("attribute")
    ).micro.f1
    assert expected == pytest.approx(8 / 11)
    assert shown_f1 == pytest.approx(expected, abs=1e-6)
    assert no_interval.startswith("on 3 products: an interval needs 17 more products with gold")
    assert used_count == "6" and "typed blind 6" in used_text
