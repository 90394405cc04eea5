"""Results page and votes export: unblinded names, the shared statistics, formula-safe CSV."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from evaluation import stats
from evaluation.results import campaign_results
from evaluation.votes_csv import read_votes
from evaluation.voting import do_cast_vote, next_item
from tests.support.ab_factories import make_campaign, make_two_runs


def cast_all(campaign, rater, choose) -> None:
    """Vote on every item open to `rater`; choose(item) returns the side chosen."""
    while (item := next_item(campaign, rater)) is not None:
        choice, comment = choose(item)
        do_cast_vote(campaign, rater, item.token, choice, comment)


def prefer(system_is_first: bool):
    """A rater who picks the first system wherever it is shown (or the second)."""

    def choose(item):
        first_side = "a" if item.first_is_a else "b"
        other_side = "b" if item.first_is_a else "a"
        return (first_side if system_is_first else other_side), ""

    return choose


@pytest.fixture
def voted(db, carol, dave):
    runs = make_two_runs(n_products=10)
    campaign = make_campaign(runs, raters_per_item=2)
    cast_all(campaign, carol, prefer(True))
    dave_choices = iter(["first"] * 6 + ["second"] * 2 + ["tie", "both_bad"])

    def dave_choose(item):
        kind = next(dave_choices)
        if kind in ("tie", "both_bad"):
            return kind, '=HYPERLINK("http://evil")' if kind == "tie" else ""
        return prefer(kind == "first")(item)

    cast_all(campaign, dave, dave_choose)
    return runs, campaign


def test_results_show_system_names_and_the_shared_statistics(client_for, alice, voted):
    runs, campaign = voted
    page = client_for(alice).get(reverse("evaluation:results", args=[campaign.pk])).content.decode()
    assert runs.hpd_system.name in page and runs.ar_system.name in page
    context = campaign_results(campaign)
    hpd = context["summary"]["systems"][runs.hpd_system.name]
    # carol: 10 first-system wins; dave: 6 wins, 2 losses, 1 tie, 1 both bad.
    assert (hpd["wins"], hpd["losses"], hpd["ties"], hpd["both_bad"]) == (16, 2, 1, 1)
    assert hpd["win_rate"] == pytest.approx(16.5 / 19)
    assert context["summary"]["sign_test_p"] == pytest.approx(stats.exact_binomial_p(16, 18))
    assert f"{hpd['win_rate'] * 100:.1f}%" in page
    assert "p = &lt; 0.001" in page or f"p = {context['summary']['sign_test_p']:.3f}" in page
    assert context["agreement"].measure == "kappa"
    assert "Cohen&#x27;s kappa" in page or "Cohen's kappa" in page
    assert "<svg" in page and "Position bias" in page
    assert context["both_bad_rate"] == pytest.approx(1 / 20)


def test_votes_count_for_the_attributes_where_the_systems_differ(voted):
    runs, campaign = voted
    rows = {r["group"]: r for r in campaign_results(campaign)["per_attribute"]}
    assert set(rows) == {"Color", "Size"}  # the runs always agree on Brand
    assert rows["Size"]["votes"] == 20 and rows["Size"]["items"] == 10
    assert rows["Color"]["items"] == 5  # Color differs on even-numbered products only
    categories = campaign_results(campaign)["per_category"]
    assert [(r["group"], r["votes"]) for r in categories] == [("Shoes", 20)]


def test_the_export_is_formula_safe_and_feeds_ab_stats(client_for, alice, voted, tmp_path):
    runs, campaign = voted
    response = client_for(alice).get(reverse("evaluation:export_votes", args=[campaign.pk]))
    assert response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 20
    assert {r["rater"] for r in rows} == {"carol", "dave"}
    comments = [r["comment"] for r in rows if r["comment"]]
    assert comments == ['\'=HYPERLINK("http://evil")']
    # The exported file is exactly what ab_stats reads, and gives the page's numbers.
    path, out = tmp_path / "votes.csv", tmp_path / "out.json"
    path.write_text(text)
    call_command("ab_stats", "--votes", str(path), "--json", str(out))
    from_file = json.loads(out.read_text())
    assert from_file == json.loads(json.dumps(campaign_results(campaign)["summary"]))
    assert stats.summarize(read_votes(io.StringIO(text))) == campaign_results(campaign)["summary"]
    call_command("ab_stats", "--campaign", str(campaign.pk), "--json", str(out))
    assert json.loads(out.read_text()) == from_file


def test_results_before_any_vote_say_so(client_for, alice):
    campaign = make_campaign(make_two_runs(n_products=3), raters_per_item=1)
    page = client_for(alice).get(reverse("evaluation:results", args=[campaign.pk])).content.decode()
    assert "No votes yet" in page


def test_the_campaign_list_keeps_system_names_off_even_for_admins(client_for, alice, voted):
    runs, campaign = voted
    page = client_for(alice).get(reverse("evaluation:my_campaigns")).content.decode()
    assert campaign.name in page and '20 <span class="muted">of 20</span>' in page
    assert runs.hpd_system.name not in page and runs.ar_system.name not in page
