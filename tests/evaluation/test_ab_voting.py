"""Voting: one vote per rater per item, N raters per item, progress, roles."""

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from evaluation.models import Assignment, Vote
from evaluation.voting import VoteError, do_cast_vote, item_to_show, next_item, progress_of
from tests.support.ab_factories import make_campaign, make_two_runs
from tests.support.personas import make_persona

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def campaign(db):
    return make_campaign(make_two_runs(n_products=6), raters_per_item=2)


def test_the_database_allows_one_vote_per_rater_per_item(campaign, carol):
    item = campaign.items.first()
    Vote.objects.create(item=item, rater=carol, choice=Vote.Choice.A)
    with pytest.raises(IntegrityError), transaction.atomic():
        Vote.objects.create(item=item, rater=carol, choice=Vote.Choice.B)
    assert list(Vote.objects.values_list("choice", flat=True)) == ["a"]


def test_a_second_vote_on_the_same_item_changes_it_and_keeps_the_first_as_history(
    client_for, campaign, carol
):
    client = client_for(carol)
    item = next_item(campaign, carol)
    url = reverse("evaluation:vote", args=[campaign.pk])
    client.post(url, {"item": item.token, "choice": "a"}, **HTMX)
    page = client.get(reverse("evaluation:rate", args=[campaign.pk]), {"change": item.token}).content.decode()
    assert 'data-choice="a"' in page and f'value="{item.token}"' in page  # the item again, her vote marked
    response = client.post(url, {"item": item.token, "choice": "b", "comment": "changed my mind"}, **HTMX)
    assert "Vote saved." in response.content.decode()
    old, new = Vote.objects.filter(item=item, rater=carol).order_by("id")
    assert (old.choice, old.superseded_at is not None) == ("a", True)
    assert (new.choice, new.comment, new.superseded_at) == ("b", "changed my mind", None)
    assert progress_of(campaign, carol).done == 1  # one item judged, whatever the history
    # The results count the latest vote only.
    from evaluation.results import campaign_votes

    assert [v.record.vote for v in campaign_votes(campaign)] == ["right"]  # B, the side she chose last


def test_a_vote_cannot_change_once_the_campaign_closes_or_on_an_item_not_voted(client_for, campaign, carol):
    item = next_item(campaign, carol)
    do_cast_vote(campaign, carol, item.token, "a")
    client = client_for(carol)
    other = campaign.items.exclude(pk=item.pk).first()
    refused = client.get(reverse("evaluation:rate", args=[campaign.pk]), {"change": other.token})
    assert refused.status_code == 400 and "no vote on that item" in refused.content.decode()
    campaign.status = campaign.Status.CLOSED
    campaign.save(update_fields=["status"])
    with pytest.raises(VoteError, match="not open to you"):
        do_cast_vote(campaign, carol, item.token, "b")
    assert list(Vote.objects.values_list("choice", "superseded_at")) == [("a", None)]


def test_it_hands_each_item_to_n_raters_and_no_more(campaign, carol, dave):
    erin = make_persona("erin", "rater")
    for rater in (carol, dave):
        while (item := next_item(campaign, rater)) is not None:
            do_cast_vote(campaign, rater, item.token, "tie")
    assert Vote.objects.count() == 6 * 2
    assert next_item(campaign, erin) is None
    assert progress_of(campaign, erin).left == 0
    with pytest.raises(VoteError, match="already has all its votes"):
        do_cast_vote(campaign, erin, campaign.items.first().token, "a")


def test_the_same_item_comes_back_until_the_rater_votes(campaign, carol, dave):
    first = next_item(campaign, carol)
    assert next_item(campaign, carol) == first  # a reload does not skip the item
    other = next_item(campaign, dave)
    assert other == first  # items others started are finished first
    do_cast_vote(campaign, carol, first.token, "b", "B has the right size")
    assert next_item(campaign, carol) != first
    assert Assignment.objects.get(item=first, rater=carol).completed_at is not None


def test_the_rating_page_changes_nothing_on_a_get(client_for, campaign, carol, dave):
    client = client_for(carol)
    shown = item_to_show(campaign, carol)
    page = client.get(reverse("evaluation:rate", args=[campaign.pk])).content.decode()
    assert f'name="item" value="{shown.token}"' in page
    assert not Assignment.objects.exists()  # looking takes no place among an item's raters
    assert next_item(campaign, carol) == shown  # the vote's POST hands out the item the page showed
    # a held item that others filled meanwhile is skipped by the page and left for the POST to drop
    do_cast_vote(campaign, dave, shown.token, "a")
    do_cast_vote(campaign, make_persona("erin", "rater"), shown.token, "b")
    assert item_to_show(campaign, carol) != shown
    assert Assignment.objects.filter(item=shown, rater=carol).exists()
    assert next_item(campaign, carol) != shown
    assert not Assignment.objects.filter(item=shown, rater=carol).exists()


def test_the_rater_sees_their_own_progress(client_for, campaign, carol):
    client = client_for(carol)
    page = client.get(reverse("evaluation:rate", args=[campaign.pk])).content.decode()
    assert "0 judged · 6 to go" in page
    item = next_item(campaign, carol)
    response = client.post(
        reverse("evaluation:vote", args=[campaign.pk]), {"item": item.token, "choice": "a"}, **HTMX
    )
    body = response.content.decode()
    assert "1 judged · 5 to go" in body and "Vote saved." in body
    assert 'id="vote-panel"' in body and "<html" not in body  # an htmx partial, not a page
    listing = client.get(reverse("evaluation:my_campaigns")).content.decode()
    assert "1 judged · 5 to go" in listing


def test_it_says_what_is_wrong_with_a_bad_vote(client_for, campaign, carol):
    client = client_for(carol)
    item = next_item(campaign, carol)
    url = reverse("evaluation:vote", args=[campaign.pk])
    assert (
        "choose A better, B better, tie or both bad"
        in client.post(url, {"item": item.token, "choice": "x"}, **HTMX).content.decode()
    )
    assert (
        "not part of this campaign"
        in client.post(url, {"item": "nope", "choice": "a"}, **HTMX).content.decode()
    )
    long = client.post(
        url, {"item": item.token, "choice": "a", "comment": "x" * 2001}, **HTMX
    ).content.decode()
    assert "the limit is 2000" in long
    assert not Vote.objects.exists()


def test_only_chosen_raters_may_vote(client_for, carol, dave):
    campaign = make_campaign(make_two_runs(n_products=3), raters=[carol], raters_per_item=1)
    assert client_for(dave).get(reverse("evaluation:rate", args=[campaign.pk])).status_code == 403
    assert "Shoe check" not in client_for(dave).get(reverse("evaluation:my_campaigns")).content.decode()
    assert client_for(carol).get(reverse("evaluation:rate", args=[campaign.pk])).status_code == 200


def test_a_closed_campaign_takes_no_votes(client_for, campaign, alice, carol):
    item = next_item(campaign, carol)
    client_for(alice).post(reverse("evaluation:campaign_status", args=[campaign.pk]), {"status": "closed"})
    response = client_for(carol).post(
        reverse("evaluation:vote", args=[campaign.pk]), {"item": item.token, "choice": "a"}
    )
    assert response.status_code == 403
    assert not Vote.objects.exists()


@pytest.mark.parametrize(
    ("name", "allowed"),
    [
        ("my_campaigns", {"alice", "carol"}),
        ("rate", {"carol"}),
        ("results", {"alice"}),
        ("export_votes", {"alice"}),
        ("campaign_new", {"alice"}),
        ("system_import", {"alice"}),
    ],
)
def test_every_page_checks_login_and_role(client, client_for, campaign, alice, bob, carol, name, allowed):
    args = [] if name in ("my_campaigns", "campaign_new", "system_import") else [campaign.pk]
    url = reverse(f"evaluation:{name}", args=args)
    assert client.get(url).status_code == 302  # anonymous: to the login page
    for user in (alice, bob, carol):
        status = client_for(user).get(url).status_code
        assert (status == 200) == (user.username in allowed), (user.username, status)
        client.logout()
    assert client_for(bob).post(reverse("evaluation:vote", args=[campaign.pk]), {}).status_code == 403


@pytest.mark.django_db(transaction=True)
def test_raters_working_at_once_never_share_a_one_rater_item():
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    campaign = make_campaign(make_two_runs(n_products=8), raters_per_item=1)
    raters = [make_persona(f"rater{n}", "rater") for n in range(8)]

    def take(rater):
        try:
            return next_item(campaign, rater).pk
        finally:
            connection.close()  # each thread has its own connection

    with ThreadPoolExecutor(max_workers=8) as pool:
        taken = list(pool.map(take, raters))
    assert len(set(taken)) == 8
    assert Assignment.objects.count() == 8
