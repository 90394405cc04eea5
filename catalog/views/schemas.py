"""Schema screens: category list, the htmx attribute editor, old versions, JSON export and import."""

import json

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.roles import ADMIN, REVIEWER, role_required
from catalog import budgets
from catalog.forms import AttributeForm, CategoryForm, SchemaImportForm
from catalog.models import Category, SchemaVersion
from catalog.schemas import (
    SchemaError,
    current_attributes,
    do_add_attribute,
    do_create_category,
    do_delete_attribute,
    do_import_schemas,
    do_move_attribute,
    do_resize_attributes,
    do_update_attribute,
    schema_to_dict,
)
from slotwise.error_pages import bad_request
from slotwise.params import MAX_VERSION, ParameterError, optional_version, whole_number


def _list_context(form=None, import_form=None) -> dict:
    categories = Category.objects.prefetch_related("schema_versions__attributes").order_by("name")
    rows = []
    for category in categories:
        versions = sorted(category.schema_versions.all(), key=lambda v: v.version)
        rows.append((category, versions[-1] if versions else None))
    return {"rows": rows, "form": form or CategoryForm(), "import_form": import_form or SchemaImportForm()}


@require_GET
@role_required(ADMIN, REVIEWER)
def schema_list(request):
    return render(request, "catalog/schema_list.html", _list_context())


@require_POST
@role_required(ADMIN)
def category_create(request):
    form = CategoryForm(request.POST)
    if form.is_valid():
        try:
            category = do_create_category(
                form.cleaned_data["name"], form.cleaned_data["description"], request.user
            )
        except SchemaError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Created {category.name}. Add its attributes below.")
            return redirect("catalog:schema", pk=category.pk)
    return render(request, "catalog/schema_list.html", _list_context(form=form), status=400)


@require_POST
@role_required(ADMIN)
def schema_import(request):
    form = SchemaImportForm(request.POST, request.FILES)
    if form.is_valid():
        payload = form.cleaned_data["file"]
        try:
            results = do_import_schemas(payload if isinstance(payload, list) else [payload], request.user)
        except SchemaError as exc:
            form.add_error("file", f"The schema was not imported: {exc}.")
        else:
            created = [str(version) for version, was_created in results if was_created]
            unchanged = [str(version) for version, was_created in results if not was_created]
            if created:
                messages.success(request, f"Imported {', '.join(created)}.")
            if unchanged:
                messages.info(request, f"{', '.join(unchanged)} already said exactly this; nothing changed.")
            if len(results) == 1:
                return redirect("catalog:schema", pk=results[0][0].category_id)
            return redirect("catalog:schemas")
    return render(request, "catalog/schema_list.html", _list_context(import_form=form), status=400)


def _too_small(category: Category, attributes) -> dict[str, int]:
    """{name: suggested tokens} of the attributes whose stored size is below what their data needs."""
    suggested = {a.name: budgets.suggested_for(category, a).need for a in attributes}
    return {a.name: suggested[a.name] for a in attributes if suggested[a.name] > a.max_tokens}


def _editor_context(category: Category, **extra) -> dict:
    version = category.current_schema
    attributes = current_attributes(version)
    suggested = [budgets.suggested_for(category, a) for a in attributes]
    return {
        "category": category,
        "version": version,
        "attributes": attributes,
        # each attribute's size, one line in characters (its tokens and the suggestion's reasons go in
        # tooltips), and the size its data suggests (catalog/budgets.py)
        "rows": [
            (a, budgets.short(a.max_tokens), s, budgets.short(s.tokens))
            for a, s in zip(attributes, suggested, strict=True)
        ],
        "too_small": [a.name for a, s in zip(attributes, suggested, strict=True) if s.need > a.max_tokens],
        "versions": category.schema_versions.select_related("created_by").order_by("-version"),
        "add_form": extra.pop("add_form", None) or AttributeForm(),
        **extra,
    }


def _render_editor(request, category: Category, **extra) -> HttpResponse:
    template = "catalog/_schema_editor.html" if request.htmx else "catalog/schema_detail.html"
    return render(request, template, _editor_context(category, **extra))


@require_GET
@role_required(ADMIN, REVIEWER)
def schema_detail(request, pk: int):
    return _render_editor(request, get_object_or_404(Category, pk=pk))


@require_GET
@role_required(ADMIN, REVIEWER)
def schema_version(request, pk: int, version: int):
    schema = get_object_or_404(
        SchemaVersion.objects.select_related("category", "created_by"), category_id=pk, version=version
    )
    return render(
        request,
        "catalog/schema_version.html",
        {"schema": schema, "category": schema.category, "attributes": current_attributes(schema)},
    )


@require_GET
@role_required(ADMIN, REVIEWER)
def schema_export(request, pk: int):
    category = get_object_or_404(Category, pk=pk)
    try:
        wanted = optional_version(request.GET, "version")
    except ParameterError as exc:
        return bad_request(request, f"Cannot export the schema: {exc}")
    schema = category.schema_versions.filter(version=wanted).first() if wanted else category.current_schema
    if schema is None:
        raise Http404("no such schema version")
    response = HttpResponse(
        json.dumps(schema_to_dict(schema), indent=2, ensure_ascii=False), content_type="application/json"
    )
    filename = f"{category.name.lower().replace(' ', '-')}-v{schema.version}.json"
    # Django's own header builder escapes a quote and encodes what is not ASCII (RFC 6266): a name
    # never breaks the header (names are printable besides, slotwise/names.py).
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


def _base_version(request) -> int:
    """The schema version the editor showed; raises SchemaError (shown in the editor, nothing
    changed) when the form sent none that parses."""
    try:
        return whole_number(request.POST, "base_version", 1, MAX_VERSION)
    except ParameterError as exc:
        raise SchemaError(
            f"{exc}: the form must send the schema version it shows; nothing was changed"
        ) from None


@require_POST
@role_required(ADMIN)
def attribute_add(request, pk: int):
    category = get_object_or_404(Category, pk=pk)
    form = AttributeForm(request.POST)
    if not form.is_valid():
        return _render_editor(request, category, add_form=form)
    try:
        version = do_add_attribute(category, _base_version(request), form.to_data(category), request.user)
    except SchemaError as exc:
        return _render_editor(request, category, add_form=form, error=str(exc))
    return _render_editor(request, category, notice=f"v{version.version}: {version.note}")


@require_http_methods(["GET", "POST"])
@role_required(ADMIN)
def attribute_edit(request, pk: int, index: int):
    category = get_object_or_404(Category, pk=pk)
    attributes = current_attributes(category.current_schema)
    if not 0 <= index < len(attributes):
        return _render_editor(
            request, category, error="That attribute is gone: the schema changed meanwhile."
        )
    if request.method == "GET":
        form = AttributeForm.initial_from(attributes[index], prefix="edit")
        return render(
            request,
            "catalog/_attribute_edit_row.html",
            {"category": category, "version": category.current_schema, "index": index, "form": form},
        )
    form = AttributeForm(request.POST, prefix="edit")
    if not form.is_valid():
        context = {"category": category, "version": category.current_schema, "index": index, "form": form}
        return render(request, "catalog/_attribute_edit_row.html", context)
    try:
        version = do_update_attribute(
            category, _base_version(request), index, form.to_data(category), request.user
        )
    except SchemaError as exc:
        return _render_editor(request, category, error=str(exc))
    return _render_editor(request, category, notice=f"v{version.version}: {version.note}")


@require_POST
@role_required(ADMIN)
def attribute_delete(request, pk: int, index: int):
    category = get_object_or_404(Category, pk=pk)
    try:
        version = do_delete_attribute(category, _base_version(request), index, request.user)
    except SchemaError as exc:
        return _render_editor(request, category, error=str(exc))
    return _render_editor(request, category, notice=f"v{version.version}: {version.note}")


@require_POST
@role_required(ADMIN)
def attributes_resize(request, pk: int):
    """Every attribute below its suggested size grows to it, as one new version (catalog/budgets.py).
    A person decides: a size is part of the versioned schema, so nothing resizes it behind the
    team's back (runs meanwhile decode with at least the suggested sizes, extraction/sizes.py)."""
    category = get_object_or_404(Category, pk=pk)
    sizes = _too_small(category, current_attributes(category.current_schema))
    try:
        version = do_resize_attributes(category, _base_version(request), sizes, request.user)
    except SchemaError as exc:
        return _render_editor(request, category, error=str(exc))
    return _render_editor(request, category, notice=f"v{version.version}: {version.note}")


@require_POST
@role_required(ADMIN)
def attribute_move(request, pk: int, index: int):
    category = get_object_or_404(Category, pk=pk)
    offset = -1 if request.POST.get("direction") == "up" else 1
    try:
        version = do_move_attribute(category, _base_version(request), index, offset, request.user)
    except SchemaError as exc:
        return _render_editor(request, category, error=str(exc))
    return _render_editor(request, category, notice=f"v{version.version}: {version.note}")
