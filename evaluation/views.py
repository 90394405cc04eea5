"""A/B screens. Rater views speak only of sides and item tokens; system names are for admins."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.roles import ADMIN, RATER, has_role, role_required
from catalog.csv_safety import csv_lines
from evaluation import charts
from evaluation.campaigns import CampaignError, CampaignSpec, do_create_campaign, do_set_status
from evaluation.forms import CampaignForm, ImportSystemForm, system_from_choice
from evaluation.models import Campaign
from evaluation.results import EXPORT_HEADER, campaign_results, campaign_votes
from evaluation.systems import SystemImportError, do_import_system
from evaluation.voting import (
    VoteError,
    do_cast_vote,
    item_to_show,
    may_rate,
    next_item,
    progress_of,
    rateable_campaigns,
    rows_for,
    voted_item,
    votes_of,
)
from slotwise.error_pages import bad_request

MY_VOTES_SHOWN = 50


@require_GET
@role_required(ADMIN, RATER)
def my_campaigns(request):
    rating = []
    if has_role(request.user, RATER):
        rating = [(c, progress_of(c, request.user)) for c in rateable_campaigns(request.user)]
    managed = None
    if has_role(request.user, ADMIN):
        # System names stay off this list: they are shown on results pages only.
        managed = Campaign.objects.annotate(
            vote_count=Count("items__votes", filter=Q(items__votes__superseded_at__isnull=True))
        )
    return render(request, "evaluation/my_campaigns.html", {"rating": rating, "managed": managed})


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def campaign_new(request):
    form = CampaignForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            spec = CampaignSpec(
                name=data["name"],
                first=system_from_choice(data["first_system"], request.user),
                second=system_from_choice(data["second_system"], request.user),
                sample_size=data["sample_size"],
                seed=data["seed"],
                raters_per_item=data["raters_per_item"],
                raters=tuple(data["raters"]),
            )
            campaign = do_create_campaign(spec, request.user)
        except CampaignError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request, f"Campaign “{campaign.name}” created with {campaign.sample_size} items."
            )
            return redirect("evaluation:my_campaigns")
    return render(request, "evaluation/campaign_new.html", {"form": form})


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def system_import(request):
    form = ImportSystemForm(request.POST or None, request.FILES or None)
    errors = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            system = do_import_system(data["name"], data["catalog"], data["file"].read(), request.user)
        except SystemImportError as exc:
            errors = exc.errors
        else:
            count = system.imported_values.count()
            messages.success(request, f"Imported {count} values as “{system.name}”.")
            return redirect("evaluation:campaign_new")
    return render(request, "evaluation/system_import.html", {"form": form, "errors": errors})


@require_POST
@role_required(ADMIN)
def campaign_status(request, pk: int):
    campaign = get_object_or_404(Campaign, pk=pk)
    status = request.POST.get("status")
    if status not in Campaign.Status.values:
        message = f"status: {status!r} is not one of {', '.join(Campaign.Status.values)}"
        return bad_request(request, message)
    do_set_status(campaign, status)
    messages.success(request, f"“{campaign.name}” is now {campaign.get_status_display().lower()}.")
    return redirect("evaluation:my_campaigns")


def _panel(request, campaign, error: str = "", saved: bool = False, status: int = 200):
    """The next item to judge, or, with ?change=<token>, an item the rater voted on, to change it.

    A GET only looks (item_to_show); after a vote (a POST) the next item is handed to the rater
    (next_item), so its place among its raters is theirs while they read it.
    """
    pick = next_item if request.method == "POST" else item_to_show
    current_vote = None
    token = request.GET.get("change", "")
    if token:
        try:
            item, current_vote = voted_item(campaign, request.user, token)
        except VoteError as exc:
            item, error, status = pick(campaign, request.user), str(exc), 400
    else:
        item = pick(campaign, request.user)
    context = {
        "campaign": campaign,
        "item": item,
        "current_vote": current_vote,
        "rows": rows_for(item) if item else [],
        "progress": progress_of(campaign, request.user),
        "my_votes": votes_of(campaign, request.user)[:MY_VOTES_SHOWN],
        "error": error,
        "saved": saved,
    }
    template = "evaluation/_vote_panel.html" if request.htmx else "evaluation/rate.html"
    return render(request, template, context, status=status)


def _rateable(request, pk: int) -> Campaign:
    campaign = get_object_or_404(Campaign, pk=pk)
    if not may_rate(campaign, request.user):
        raise PermissionDenied("this campaign is not open to you for votes")
    return campaign


@require_GET
@role_required(RATER)
def rate(request, pk: int):
    return _panel(request, _rateable(request, pk))


@require_POST
@role_required(RATER)
def vote(request, pk: int):
    campaign = _rateable(request, pk)
    try:
        do_cast_vote(
            campaign,
            request.user,
            token=request.POST.get("item", ""),
            choice=request.POST.get("choice", ""),
            comment=request.POST.get("comment", ""),
        )
    except VoteError as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect("evaluation:rate", pk=campaign.pk)
        return _panel(request, campaign, error=str(exc))
    if not request.htmx:
        return redirect("evaluation:rate", pk=campaign.pk)
    return _panel(request, campaign, saved=True)


@require_GET
@role_required(ADMIN)
def results(request, pk: int):
    campaign = get_object_or_404(Campaign.objects.select_related("first_system", "second_system"), pk=pk)
    context = {"campaign": campaign, **campaign_results(campaign)}
    if context["summary"]:
        context.update(charts.results_charts(context))
    return render(request, "evaluation/results.html", context)


@require_GET
@role_required(ADMIN)
def export_votes(request, pk: int):
    campaign = get_object_or_404(Campaign, pk=pk)
    rows = [EXPORT_HEADER, *(v.export_row() for v in campaign_votes(campaign))]
    response = StreamingHttpResponse(csv_lines(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, f"campaign-{campaign.pk}-votes.csv")
    return response
