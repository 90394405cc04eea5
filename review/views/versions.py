"""The model versions a run may use, each with its F1 on blind gold: a fragment the run form loads
beside its model menu (htmx), so that extraction's form never imports review's scoring."""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from registry.versions import offered_versions
from review.version_scores import blind_score
from review.views.common import reviewers_only


@require_GET
@reviewers_only  # as every review page (the run form itself is for admins)
def version_scores(request):
    rows = [(version, blind_score(version, version.catalog)) for version in offered_versions()]
    return render(request, "review/_version_scores.html", {"rows": rows})
