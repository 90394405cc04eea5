"""'Improve the model': a catalog's reviewed gold, its training jobs (live progress, cancel), its
versions and the admin's decisions on them. Admins only; thin: the work is in services / versions."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.roles import ADMIN, role_required
from catalog.models import Catalog
from registry.models import ModelVersion, Promotion
from registry.versions import DecisionRefused, default_version, do_discard, do_promote, do_undo_promotion
from training import gold
from training.curve import curve_charts, curve_points
from training.forms import JobForm
from training.models import TrainingJob
from training.services import JobRefused, JobRequest, do_cancel_job, start_training_job

JOBS_SHOWN = 10


def _jobs():
    # never a version's bytes nor a checkpoint in the web process: pages need their names only
    return TrainingJob.objects.select_related("result", "parent", "created_by").defer(
        "checkpoint", "result__archive", "parent__archive"
    )


@require_GET
@role_required(ADMIN)
def catalogs(request):
    rows = [
        (c, gold.counts_by_provenance(gold.reviewed_gold(c)), default_version(c, create=False))
        for c in Catalog.objects.all()
    ]
    return render(request, "training/catalogs.html", {"rows": rows})


def _improve_context(catalog: Catalog, form: JobForm) -> dict:
    versions = (
        catalog.model_versions.select_related("parent").defer("archive", "parent__archive").order_by("-id")
    )
    points = curve_points(catalog)
    return {
        "catalog": catalog,
        "form": form,
        "curve_points": points,
        "curve_charts": curve_charts(points),
        "counts": gold.counts_by_provenance(gold.reviewed_gold(catalog)),
        "jobs": _jobs().filter(catalog=catalog)[:JOBS_SHOWN],
        "versions": versions,
        "default": default_version(catalog, create=False),
        "promotion": Promotion.objects.filter(catalog=catalog, undone_at__isnull=True)
        .select_related("version")
        .defer("version__archive")
        .first(),
    }


@require_GET
@role_required(ADMIN)
def improve(request, catalog_id: int):
    catalog = get_object_or_404(Catalog, pk=catalog_id)
    return render(request, "training/improve.html", _improve_context(catalog, JobForm()))


@require_POST
@role_required(ADMIN)
def start(request, catalog_id: int):
    catalog = get_object_or_404(Catalog, pk=catalog_id)
    form = JobForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        request_ = JobRequest(catalog, data["minutes"], data["holdout_percent"] / 100, data["seed"])
        try:
            job = start_training_job(request_, user=request.user)
        except JobRefused as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Training job {job.pk} queued on the train queue.")
            return redirect("training:job", job_id=job.pk)
    return render(request, "training/improve.html", _improve_context(catalog, form), status=400)


@require_GET
@role_required(ADMIN)
def job(request, job_id: int):
    found = get_object_or_404(_jobs().select_related("catalog"), pk=job_id)
    context = {"job": found, "default": default_version(found.catalog, create=False)}
    return render(request, "training/job.html", context)


@require_GET
@role_required(ADMIN)
def job_progress(request, job_id: int):
    """Polled by the job page while the job is under way; a GET changes nothing."""
    found = get_object_or_404(_jobs(), pk=job_id)
    response = render(request, "training/_progress.html", {"job": found})
    if not found.is_active:
        response["HX-Refresh"] = "true"  # the page shows the proof and the decisions once it ends
    return response


@require_POST
@role_required(ADMIN)
def cancel(request, job_id: int):
    found = get_object_or_404(_jobs(), pk=job_id)
    if found.is_active:
        do_cancel_job(found.pk)
        messages.info(request, f"Training job {found.pk} cancelled: no version will be stored.")
    else:
        messages.error(
            request, f"Training job {found.pk} is {found.get_status_display().lower()}: nothing to cancel."
        )
    return redirect("training:job", job_id=found.pk)


@require_POST
@role_required(ADMIN)
def promote(request, version_id: int):
    version = get_object_or_404(ModelVersion.objects.defer("archive"), pk=version_id)
    try:
        do_promote(version, user=request.user)
    except DecisionRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{version} is now the default of {version.catalog}: its runs decode with it."
        )
    return (
        redirect("training:improve", catalog_id=version.catalog_id)
        if version.catalog_id
        else redirect("training:catalogs")
    )


@require_POST
@role_required(ADMIN)
def discard(request, version_id: int):
    version = get_object_or_404(ModelVersion.objects.defer("archive"), pk=version_id)
    try:
        do_discard(version)
    except DecisionRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"{version} discarded: it is no longer offered for runs.")
    return (
        redirect("training:improve", catalog_id=version.catalog_id)
        if version.catalog_id
        else redirect("training:catalogs")
    )


@require_POST
@role_required(ADMIN)
def undo_promotion(request, catalog_id: int):
    catalog = get_object_or_404(Catalog, pk=catalog_id)
    try:
        promotion = do_undo_promotion(catalog, user=request.user)
    except DecisionRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.info(request, f"Promotion undone: {promotion.previous} is the default of {catalog} again.")
    return redirect("training:improve", catalog_id=catalog.pk)
