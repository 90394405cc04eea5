"""Upload screens: file -> mapping -> preview -> confirm -> live progress -> summary and error report."""

from itertools import islice

from django.conf import settings
from django.contrib import messages
from django.db.models import Count
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.roles import ADMIN, role_required
from catalog.csv_safety import csv_lines
from catalog.forms import MappingForm, UploadForm
from catalog.imports.errors import BadFile, BadMapping, FileOverLimit, WrongImportState
from catalog.imports.map import Mapping, do_save_mapping, guess_mapping
from catalog.imports.new_categories import EMPTY, WITH_ATTRIBUTES, do_create_import_categories
from catalog.imports.preview import build_preview
from catalog.imports.read import DELIMITER_NAMES, ENCODING_NAMES, check_size, read_rows
from catalog.imports.start import do_start_import
from catalog.imports.upload import do_create_import
from catalog.models import Attribute, Catalog, ImportJob
from catalog.schemas import SchemaError
from catalog.upkeep import UpkeepRefused, do_remove_catalog, do_remove_import
from slotwise.body_guard import FORM_OVERHEAD_BYTES, body_limit

SAMPLE_ROWS = 3
ERRORS_ON_PAGE = 50


def _upload_body_limit() -> int:
    return settings.CATALOG_UPLOAD_MAX_BYTES + FORM_OVERHEAD_BYTES


def _refuse_large_upload(request, length: int):
    """The upload page saying how far over the limit the file is; its body is never read
    (slotwise/body_guard.py answers with this before CSRF reads the form)."""
    return _render_upload(request, UploadForm(), status=413, error=too_large_message(length))


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
@body_limit(_upload_body_limit, too_large=_refuse_large_upload)
def upload(request):
    form = UploadForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                job = do_create_import(
                    form.cleaned_data["file"],
                    form.cleaned_data["catalog"],
                    form.cleaned_data["new_catalog"],
                    request.user,
                )
            except (BadFile, FileOverLimit) as exc:
                form.add_error("file", str(exc))
            else:
                return redirect("catalog:import_map", pk=job.pk)
        status = 400
    return _render_upload(request, form, status)


def too_large_message(size: int) -> str:
    try:
        check_size(size, settings.CATALOG_UPLOAD_MAX_BYTES)
    except FileOverLimit as exc:
        return str(exc)
    return "The file is over the size limit."


def _render_upload(request, form, status: int, error: str = ""):
    recent = ImportJob.objects.select_related("catalog", "created_by")[:10]
    context = {"form": form, "recent": recent, "error": error}
    return render(request, "catalog/upload.html", context, status=status)


@require_GET
@role_required(ADMIN)
def import_list(request):
    jobs = ImportJob.objects.select_related("catalog", "created_by")[:100]
    catalogs = Catalog.objects.annotate(product_count=Count("products")).order_by("name")
    return render(request, "catalog/import_list.html", {"jobs": jobs, "catalogs": catalogs})


@require_POST
@role_required(ADMIN)
def import_remove(request, pk: int):
    job = get_object_or_404(ImportJob, pk=pk)
    try:
        do_remove_import(job.pk)
    except UpkeepRefused as exc:
        messages.error(request, f"Cannot remove the import: {exc}.")
        return redirect("catalog:import_detail", pk=job.pk)
    messages.success(
        request, f"Removed the import of {job.original_name}; the catalog's products are as they were."
    )
    return redirect("catalog:imports")


@require_POST
@role_required(ADMIN)
def catalog_remove(request, pk: int):
    catalog = get_object_or_404(Catalog, pk=pk)
    try:
        do_remove_catalog(catalog.pk)
    except UpkeepRefused as exc:
        messages.error(request, f"Cannot remove the catalog: {exc}.")
    else:
        messages.success(request, f"Removed the empty catalog {catalog.name}.")
    return redirect("catalog:imports")


def _mapping_initial(job: ImportJob) -> dict:
    if job.mapping:
        mapping = Mapping.from_json(job.mapping)
    else:
        names = sorted(set(Attribute.objects.values_list("name", flat=True)))
        mapping = guess_mapping(job.header, names)
    initial = {
        name: "" if getattr(mapping, name) is None else str(getattr(mapping, name))
        for name in ("sku", "title", "description", "category")
    }
    initial["fixed_category"] = mapping.fixed_category_id
    for index, attribute in mapping.known.items():
        initial[f"known_{index}"] = attribute
    return initial


def _mapping_from(form: MappingForm) -> Mapping:
    fixed = form.cleaned_data.get("fixed_category")
    mapping = Mapping(
        sku=form.column_choice("sku"),
        title=form.column_choice("title"),
        description=form.column_choice("description"),
        category=form.column_choice("category"),
        fixed_category_id=fixed.pk if fixed and form.column_choice("category") is None else None,
    )
    used = mapping.used_columns()
    for index in range(len(form.header)):
        name = (form.cleaned_data.get(f"known_{index}") or "").strip()
        if name and index not in used:
            mapping.known[index] = name
    return mapping


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def import_map(request, pk: int):
    job = get_object_or_404(ImportJob.objects.select_related("catalog"), pk=pk)
    if job.status not in {ImportJob.Status.UPLOADED, ImportJob.Status.MAPPED}:
        return redirect("catalog:import_detail", pk=job.pk)
    form = MappingForm(request.POST or None, header=job.header, initial=_mapping_initial(job))
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                do_save_mapping(job, _mapping_from(form))
            except (BadMapping, WrongImportState) as exc:
                form.add_error(None, str(exc))
            else:
                return redirect("catalog:import_preview", pk=job.pk)
    samples = [cells for _, cells in islice(read_rows(job.open_file, job.file_format), SAMPLE_ROWS)]
    columns = [
        {
            "index": i,
            "name": name,
            "samples": [row[i] for row in samples if i < len(row)],
            "known": form.known_field(i),
        }
        for i, name in enumerate(job.header)
    ]
    attribute_names = sorted(set(Attribute.objects.values_list("name", flat=True)))
    context = {
        "job": job,
        "form": form,
        "columns": columns,
        "attribute_names": attribute_names,
        "encoding": ENCODING_NAMES.get(job.encoding, job.encoding),
        "delimiter": DELIMITER_NAMES.get(job.delimiter, job.delimiter),
    }
    return render(request, "catalog/import_map.html", context, status=status)


@require_GET
@role_required(ADMIN)
def import_preview(request, pk: int):
    job = get_object_or_404(ImportJob.objects.select_related("catalog"), pk=pk)
    if job.status == ImportJob.Status.UPLOADED:
        return redirect("catalog:import_map", pk=job.pk)
    if job.status != ImportJob.Status.MAPPED:
        return redirect("catalog:import_detail", pk=job.pk)
    preview = build_preview(job)
    mapping = Mapping.from_json(job.mapping)
    context = {
        "job": job,
        "preview": preview,
        "mapping": mapping,
        "known_names": list(mapping.known.values()),
        "good_rows": preview.checked_rows - preview.bad_rows,
        "schema_choices": {"attributes": WITH_ATTRIBUTES, "empty": EMPTY},
        "encoding": ENCODING_NAMES.get(job.encoding, job.encoding),
        "delimiter": DELIMITER_NAMES.get(job.delimiter, job.delimiter),
    }
    return render(request, "catalog/import_preview.html", context)


@require_POST
@role_required(ADMIN)
def import_categories(request, pk: int):
    """Create the new categories the preview lists (catalog/imports/new_categories.py), then show
    the preview again: their rows are good rows now."""
    job = get_object_or_404(ImportJob, pk=pk)
    try:
        created = do_create_import_categories(
            job, request.POST.getlist("category"), request.POST.get("schema", ""), request.user
        )
    except (SchemaError, WrongImportState) as exc:
        messages.error(request, f"No category was created: {exc}.")
    else:
        names = ", ".join(category.name for category in created)
        messages.success(request, f"Created {names}; their rows import now. Check the preview below.")
    return redirect("catalog:import_preview", pk=job.pk)


@require_POST
@role_required(ADMIN)
def import_start(request, pk: int):
    job = get_object_or_404(ImportJob, pk=pk)
    try:
        do_start_import(job, all_or_nothing=request.POST.get("all_or_nothing") == "on")
    except WrongImportState as exc:
        messages.error(request, str(exc))
    return redirect("catalog:import_detail", pk=job.pk)


def _job_context(job: ImportJob) -> dict:
    return {
        "job": job,
        # a finished import's skipped rows, or the rows that stopped an all-or-nothing one
        "errors": job.row_errors.all()[:ERRORS_ON_PAGE] if job.is_finished and job.skipped_count else [],
    }


@require_GET
@role_required(ADMIN)
def import_detail(request, pk: int):
    job = get_object_or_404(ImportJob.objects.select_related("catalog", "created_by"), pk=pk)
    return render(request, "catalog/import_detail.html", _job_context(job))


@require_GET
@role_required(ADMIN)
def import_progress(request, pk: int):
    job = get_object_or_404(ImportJob.objects.select_related("catalog"), pk=pk)
    return render(request, "catalog/_import_progress.html", _job_context(job))


@require_GET
@role_required(ADMIN)
def import_errors(request, pk: int):
    job = get_object_or_404(ImportJob, pk=pk)

    def rows():
        # The file's own columns follow as they were (its sku column among them), so the report
        # holds each SKU once and its rows can be fixed and uploaded again.
        yield ["row", "column", "reason", *job.header]
        for error in job.row_errors.order_by("row_number", "id").iterator(chunk_size=2000):
            yield [error.row_number, error.column, error.reason, *error.cells]

    response = StreamingHttpResponse(csv_lines(rows()), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, f"import-{job.pk}-errors.csv")
    return response
