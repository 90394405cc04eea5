"""Two raters vote by keyboard in a real Chromium; then the admin opens the results."""

import os
from pathlib import Path

import pytest

from evaluation.models import Vote
from tests.support.ab_factories import make_campaign, make_two_runs
from tests.support.browser import chromium_page, sign_in

ITEMS = 4
# Set to a folder to keep screenshots of the rating and results pages (for a report or a review).
SCREENSHOTS = os.environ.get("SLOTWISE_SCREENSHOTS")


def screenshot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def vote_by_keyboard(page, base_url: str, keys: list[str], comment_on_first: str = "") -> None:
    page.goto(f"{base_url}/ab/my_campaigns/")
    page.click("#rating-campaigns a.button")
    page.wait_for_selector("#vote-form")
    for done, key in enumerate(keys):
        page.wait_for_selector(f"#progress-text:has-text('{done} judged')")
        if done == 0 and comment_on_first:
            page.keyboard.press("c")
            # Digits typed into the comment are text: they must not vote.
            page.keyboard.type(comment_on_first)
            page.keyboard.press("Escape")
            assert page.input_value("#vote-comment") == comment_on_first
            screenshot(page, "ab-rating")
        page.keyboard.press(key)
    page.wait_for_selector("#all-done")
    assert page.inner_text("#progress-text") == f"{len(keys)} judged · 0 to go"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_two_raters_vote_by_keyboard_and_the_admin_reads_the_results(
    live_server, alice, carol, dave, password
):
    runs = make_two_runs(n_products=ITEMS)
    campaign = make_campaign(runs, raters_per_item=2, raters=[carol, dave], name="Trail shoes")

    with chromium_page() as page:
        sign_in(page, live_server.url, "carol", password)
        vote_by_keyboard(page, live_server.url, ["1", "2", "3", "4"], comment_on_first="size 42 looks wrong")
        html = page.content()
        assert runs.hpd_system.name not in html and "HPD" not in html

        page.context.clear_cookies()
        sign_in(page, live_server.url, "dave", password)
        vote_by_keyboard(page, live_server.url, ["1", "1", "2", "1"])

        page.context.clear_cookies()
        sign_in(page, live_server.url, "alice", password)
        page.goto(f"{live_server.url}/ab/campaigns/{campaign.pk}/results/")
        headline = page.inner_text("#headline")
        table = page.inner_text("#system-table")
        assert runs.hpd_system.name in headline and runs.ar_system.name in table
        assert "8 of 8 votes cast" in page.inner_text("main")
        assert "Cohen's kappa" in page.inner_text("#agreement")
        assert page.locator("svg.chart").count() >= 3
        screenshot(page, "ab-results")
        with page.expect_download() as download:
            page.click("#export-votes")
        assert download.value.suggested_filename == f"campaign-{campaign.pk}-votes.csv"

    votes = Vote.objects.filter(item__campaign=campaign)
    assert votes.count() == 8
    carol_votes = votes.filter(rater=carol).order_by("created_at")
    assert [v.choice for v in carol_votes] == ["a", "b", "tie", "both_bad"]
    assert carol_votes[0].comment == "size 42 looks wrong"
    assert [v.choice for v in votes.filter(rater=dave).order_by("created_at")] == ["a", "a", "b", "a"]
