"""Nothing a rater receives tells which system is which: the served HTML and the vote requests."""

import re

import pytest
from django.urls import reverse

from evaluation.models import CampaignItem
from evaluation.voting import next_item
from tests.support.ab_factories import make_campaign, make_two_runs

HTMX = {"HTTP_HX_REQUEST": "true"}
TOKEN = re.compile(r'name="item" value="([^"]+)"')
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')


def giveaways(runs) -> list[str]:
    """Strings that would unblind a rater: names, decoders, ids of runs and systems."""
    words = [
        runs.hpd.name,
        runs.ar.name,
        runs.hpd_system.name,
        runs.ar_system.name,
        "HPD",
        "hyper-parallel",
        "autoregressive",
        "decoder",
        "test-model",
        "confidence",
    ]
    return words


def id_attributes(html: str) -> str:
    """Every URL and htmx/data attribute of the page (where ids of runs or systems would ride)."""
    return " ".join(re.findall(r'(?:href|src|action|hx-[a-z-]+|data-[a-z-]+|name|value|id)="([^"]*)"', html))


def assert_blind(html: str, runs) -> None:
    # Random tokens (CSRF, opaque item tokens) can spell "run" or "hpd" by chance: mask them first.
    for token in set(TOKEN.findall(html)):
        html = html.replace(token, "TOKEN")
    html = normalized(html)
    lowered = html.lower()
    for word in giveaways(runs):
        assert word.lower() not in lowered, f"{word!r} is in the rater's page"
    assert not re.search(r"\bar\b", lowered), "the decoder code 'ar' is in the rater's page"
    attributes = id_attributes(html)
    for pk in {runs.hpd.pk, runs.ar.pk, runs.hpd_system.pk, runs.ar_system.pk} - {None}:
        for pattern in (rf"\brun[s]?[/=:_-]?{pk}\b", rf"\bsystem[s]?[/=:_-]?{pk}\b"):
            assert not re.search(pattern, attributes), f"{pattern} in {attributes}"
    assert "system" not in attributes.lower() and "run" not in attributes.lower()


def normalized(html: str) -> str:
    return CSRF.sub(r"\1CSRF", TOKEN.sub('name="item" value="TOKEN"', html))


@pytest.mark.django_db
def test_the_rating_page_is_the_same_whichever_system_is_a(client_for, carol):
    # Both systems give the same values: any difference between the two sides' pages is a leak.
    runs = make_two_runs(n_products=4, same_values=True)
    campaign = make_campaign(runs, raters_per_item=1)
    client = client_for(carol)
    url = reverse("evaluation:rate", args=[campaign.pk])
    item = next_item(campaign, carol)
    first = client.get(url).content.decode()
    CampaignItem.objects.filter(pk=item.pk).update(first_is_a=not item.first_is_a)
    flipped = client.get(url).content.decode()
    assert item.product.title in first
    assert normalized(first) == normalized(flipped)
    assert_blind(first, runs)


@pytest.mark.django_db
def test_pages_and_vote_answers_never_name_a_system(client_for, carol):
    runs = make_two_runs(n_products=5)
    campaign = make_campaign(runs, raters_per_item=1)
    client = client_for(carol)
    pages = [client.get(reverse("evaluation:my_campaigns")).content.decode()]
    page = client.get(reverse("evaluation:rate", args=[campaign.pk])).content.decode()
    pages.append(page)
    seen_sides = set()
    for _ in range(5):
        token = TOKEN.search(page).group(1)
        item = CampaignItem.objects.get(token=token)
        seen_sides.add(item.first_is_a)
        # The request carries the opaque token, the side chosen and the comment: nothing else.
        form_fields = set(re.findall(r'name="([^"]+)"', page.split('id="vote-form"')[1].split("</form>")[0]))
        assert form_fields == {"csrfmiddlewaretoken", "item", "choice", "comment"}
        assert str(item.pk) != token and campaign.first_system.name not in token
        page = client.post(
            reverse("evaluation:vote", args=[campaign.pk]), {"item": token, "choice": "tie"}, **HTMX
        ).content.decode()
        pages.append(page)
    assert seen_sides == {True, False}  # the check covered both side assignments
    assert "All done" in page
    for html in pages:
        assert_blind(html, runs)


@pytest.mark.django_db
def test_values_are_placed_by_the_stored_side(client_for, carol):
    runs = make_two_runs(n_products=2)
    campaign = make_campaign(runs, raters_per_item=1)
    item = next_item(campaign, carol)
    number = runs.products.index(item.product)
    html = client_for(carol).get(reverse("evaluation:rate", args=[campaign.pk])).content.decode()
    size_row = html.split('<th scope="row">Size</th>')[1].split("</tr>")[0]
    cells = re.findall(r"<td>(.*?)</td>", size_row)
    hpd, ar = f"size-{number}", f"other-size-{number}"
    assert cells == ([hpd, ar] if item.first_is_a else [ar, hpd])
