"""In a real Chromium: the auto-accept page offers the threshold pooled over the attributes with too
few blind labels of their own, says what it pooled, over how many values and the interval's lower
end, names the attribute its own labels left out, and accepting a pooled attribute takes only its
pending values at that threshold."""

import pytest

from extraction.models import ExtractedValue
from tests.review.test_pooled_precision import MANY, catalog_of, index, label_blind
from tests.support.browser import chromium_page, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_page_states_the_pooled_bound_and_accepts_a_pooled_attribute(
    live_server, alice, password, tmp_path
):
    # 100 products labelled blind at 0.99, ten attributes, Color invented on 10 of them; 20 more at
    # 0.99 and 10 at 0.5
    scene, values = catalog_of([0.99] * 120 + [0.5] * 10, MANY)
    label_blind(
        [v for v in values if index(v) < 100],
        lambda v: v.attribute.name == "Color" and index(v) % 10 == 0,
        alice,
    )
    with chromium_page() as page:
        page.on("dialog", lambda dialog: dialog.accept())
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/review/auto-accept/?run={scene.run.pk}&target=98")
        offer = page.inner_text("#pool-offer")
        members = ", ".join(name for name in MANY if name != "Color")
        assert "confidence ≥ 0.990" in offer and page.inner_text("#pool-members") == members
        # Color's labels count in the bound though it is left out
        assert page.inner_text("#pool-evidence").startswith(
            "1000 blind-labelled values at or above it, 99.0% right (95% Wilson interval 98.2%–99.5%)"
        )
        assert "Color (100 labelled values, 90.0% right, at most 94.5%)" in page.inner_text("#pool-left-out")
        color = page.locator('#attributes tr[data-attribute="Color"]')
        assert color.get_attribute("data-offered") == "" and color.locator("button.auto-accept").count() == 0
        brand = page.locator('#attributes tr[data-attribute="Brand"]')
        assert brand.get_attribute("data-offered") == "0.990000"
        assert (
            "(pooled)" in brand.inner_text()
            and "1000 labelled values of the pooled attributes" in brand.inner_text()
        )
        assert brand.locator(".pending").inner_text() == "120"
        page.screenshot(path=str(tmp_path / "auto-accept-pooled.png"), full_page=True)
        brand.locator("button.auto-accept").click()
        page.wait_for_url(lambda url: "/review/queue/" in url)
        page.wait_for_selector(".msg-success:has-text('Accepted 120 values')")
    accepted = ExtractedValue.objects.filter(run=scene.run, review__status="accepted")
    assert set(accepted.values_list("attribute__name", flat=True)) == {"Brand"}
    assert accepted.count() == 120 and not accepted.filter(confidence__lt=0.99).exists()
