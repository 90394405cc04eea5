"""The model versions a run may use, each with its F1 on blind gold: a fragment the run form loads
beside its model menu (htmx), so that extraction's form never imports review's scoring."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, role_required
from registry.versions import offered_versions
from review.version_scores import blind_score


@require_GET
@role_required(ADMIN)  # the run form's audience
def version_scores(request):
    rows = [(version, blind_score(version, version.catalog)) for version in offered_versions()]
    return render(request, "review/_version_scores.html", {"rows": rows})
