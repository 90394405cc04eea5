"""In a real Chromium: the queue opens on the newest finished run and keeps its cursor after a
filter change; auto-accept refuses a threshold without blind gold, then offers one that skips cut values; a rater changes a vote and the results
count the new one."""

import pytest

from evaluation.models import Vote
from extraction.models import ExtractedValue, Run
from review.opening import open_reviews
from tests.support.ab_factories import make_campaign, make_two_runs
from tests.support.browser import chromium_page, sign_in
from tests.support.factories import make_run, make_scenario, make_values
from tests.support.gold import label_blind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ROWS = "document.querySelectorAll('#value-list .vrow').length"


def test_the_queue_opens_on_the_newest_finished_run_and_j_goes_to_row_two_after_a_filter(
    live_server, bob, password
):
    finished = make_scenario(products=4)
    running = make_run(finished.products, finished.schema, status=Run.Status.RUNNING, name="still going")
    make_values(running, {(finished.products[0], finished.attributes["Brand"]): ("partial", 0.1)})
    color = sorted(
        (v for v in finished.values if v.attribute.name == "Color"), key=lambda v: (v.confidence, v.pk)
    )
    with chromium_page() as page:
        sign_in(page, live_server.url, "bob", password)
        page.goto(f"{live_server.url}/review/queue/")
        assert page.input_value("#f-run") == str(finished.run.pk)  # not the newer, running one
        label = page.inner_text(f"#f-run option[value='{running.pk}']")
        assert label.endswith("· running")
        page.keyboard.press("j")
        page.keyboard.press("j")  # the cursor is on row 3 when the filter changes
        page.select_option("#f-attribute", "Color")
        page.wait_for_function(f"{ROWS} === 4")
        page.wait_for_selector(f"#value-{color[0].pk}.active")
        page.keyboard.press("j")
        page.wait_for_selector(f"#value-{color[1].pk}.active")
        page.keyboard.press("a")
        page.wait_for_selector(f"#value-{color[1].pk}.status-accepted")
    assert ExtractedValue.objects.get(pk=color[0].pk).review.status == "pending"


def test_auto_accept_refuses_without_blind_gold_then_offers_a_threshold_that_skips_cut_values(
    live_server, alice, password, tmp_path
):
    # 60 products: 45 Brand values at 0.99 (one of them cut by the token budget), 15 at 0.4.
    confidences = [0.99] * 45 + [0.4] * 15
    scene = make_scenario(
        products=len(confidences), attributes=("Brand",), value_of=lambda i, n: (f"b{i}", confidences[i])
    )
    values = sorted(scene.values, key=lambda v: v.product.sku)
    cut = values[0]
    ExtractedValue.objects.filter(pk=cut.pk).update(truncated=True)
    open_reviews(ExtractedValue.objects.filter(pk=cut.pk))  # as the worker writing it does
    with chromium_page() as page:
        page.on("dialog", lambda dialog: dialog.accept())
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/review/queue/?run={scene.run.pk}")
        page.click("#auto-accept-link")
        page.fill("#target", "90")
        page.click("#propose")
        page.wait_for_selector("#refusal")
        assert "No threshold can be offered yet" in page.inner_text("#refusal")
        assert page.inner_text("#products-needed") == "20" and page.inner_text("#labelled-count") == "0 of 60"
        assert page.locator("button.auto-accept").count() == 0
        assert "Needs about 35 more blind-labelled products" in page.inner_text("#attributes")
        page.screenshot(path=str(tmp_path / "auto-accept-before.png"), full_page=True)
        page.click("#label-blind")  # the refusal leads to the blind labelling of this catalog
        page.wait_for_selector("#blind-product")
        assert "0 of 60 products labelled blind" in page.inner_text("#blind-progress")

        # 44 products labelled blind, each label the model's value: right at 0.99
        label_blind(values[:45], alice)
        page.goto(f"{live_server.url}/review/auto-accept/?run={scene.run.pk}&target=90")
        row = page.locator('#attributes tr[data-attribute="Brand"]')
        assert row.get_attribute("data-offered") == "0.990000"
        assert "100.0%" in row.inner_text() and row.locator(".pending").inner_text() == "44"
        page.screenshot(path=str(tmp_path / "auto-accept-after.png"), full_page=True)
        row.locator("button.auto-accept").click()
        page.wait_for_url(lambda url: "/review/queue/" in url)
        page.wait_for_selector(".msg-success:has-text('Accepted 44 values')")
        # back in the queue, the cut value comes first, marked, still pending
        first_row = page.locator("#value-list .vrow").first
        assert first_row.get_attribute("id") == f"value-{cut.pk}" and first_row.locator(".cut").count() == 1
    statuses = dict(ExtractedValue.objects.filter(run=scene.run).values_list("pk", "review__status"))
    assert statuses.pop(cut.pk) == "pending"  # cut by the token budget: never auto-accepted
    assert sorted(statuses.values()) == ["accepted"] * 44 + ["pending"] * 15


def test_a_rater_changes_a_vote_and_the_results_count_the_new_one(live_server, carol, alice, password):
    campaign = make_campaign(make_two_runs(n_products=2), raters_per_item=1)
    with chromium_page() as page:
        sign_in(page, live_server.url, "carol", password)
        page.goto(f"{live_server.url}/ab/campaigns/{campaign.pk}/rate/")
        page.wait_for_selector("#vote-form")
        first_token = page.input_value("#vote-form input[name=item]")
        page.keyboard.press("1")  # A is better
        page.wait_for_selector("#change-last")
        page.click("#change-last")
        page.wait_for_selector("#changing")
        assert page.get_attribute("#current-choice", "data-choice") == "a"
        assert page.input_value("#vote-form input[name=item]") == first_token
        page.keyboard.press("2")  # B is better after all
        # "1 judged" already shows while changing, so wait for the changed vote's own answer: an
        # unfinished vote request could otherwise reset the CSRF cookie under the next sign-in.
        page.wait_for_selector("#changing", state="detached")
        # the list of votes is a closed <details>: its entries are attached, not visible
        page.wait_for_selector("#my-votes li:has-text('B is better')", state="attached")
        assert page.inner_text("#progress-text").startswith("1 judged")
        page.context.clear_cookies()
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/ab/campaigns/{campaign.pk}/results/")
        votes_line = page.inner_text("main p.muted")
        assert "1 of 2 votes cast" in votes_line
    item = campaign.items.get(token=first_token)
    b_system = (campaign.second_system if item.first_is_a else campaign.first_system).name  # side B
    assert list(Vote.objects.filter(rater=carol).order_by("id").values_list("choice", flat=True)) == [
        "a",
        "b",
    ]
    assert Vote.objects.current().get(rater=carol).choice == "b"
    from evaluation.results import campaign_results

    composition = campaign_results(campaign)["composition"]
    first_won = b_system == campaign.first_system.name
    assert (composition["first_wins"], composition["second_wins"]) == ((1, 0) if first_won else (0, 1))
