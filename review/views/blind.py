"""Blind labelling pages: choose a catalog (and a category), then type each product's attributes
with the keyboard, seeing only the product's text (no model value, no confidence)."""

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from catalog.models import Catalog, Category, Product
from review.blind import AlreadyLabelled, BlindLabelError, Selection, do_blind_label, fields_of
from review.views.common import reviewers_only
from slotwise.error_pages import bad_request
from slotwise.params import ParameterError, optional_id


class SelectionError(ValueError):
    """A catalog or category parameter that names nothing; the message says which and why."""


def _id(params, name: str) -> int | None:
    try:
        return optional_id(params, name)
    except ParameterError as exc:
        raise SelectionError(str(exc)) from None


def _selection(params) -> Selection:
    catalog_id, category_id = _id(params, "catalog"), _id(params, "category")
    if catalog_id is None:
        raise SelectionError("catalog: choose the catalog whose products you label")
    catalog = Catalog.objects.filter(pk=catalog_id).first()
    if catalog is None:
        raise SelectionError(f"catalog: there is no catalog #{catalog_id}")
    category = None
    if category_id is not None:
        category = Category.objects.filter(pk=category_id).first()
        if category is None:
            raise SelectionError(f"category: there is no category #{category_id}")
    return Selection(catalog, category)


def _label_url(selection: Selection, after: int | None = None) -> str:
    params = {**selection.as_params(), **({"after": after} if after else {})}
    return f"{reverse('review:blind_label')}?{urlencode(params)}"


def _label_page(request, selection, product, typed=None, errors=None, status=200):
    labelled, total = selection.progress()
    fields = [
        (attribute, (typed or {}).get(attribute.name, ""), (errors or {}).get(attribute.name, ""))
        for attribute in (fields_of(product) if product else [])
    ]
    context = {
        "selection": selection,
        "product": product,
        "schema": product.category.current_schema if product else None,
        "fields": fields,
        "errors": errors or {},
        "labelled": labelled,
        "total": total,
        "skip_url": _label_url(selection, product.pk) if product else "",
    }
    return render(request, "review/blind_label.html", context, status=status)


@require_GET
@reviewers_only
def blind_start(request):
    catalogs = Catalog.objects.order_by("name")
    categories = Category.objects.filter(products__isnull=False).distinct().order_by("name")
    return render(request, "review/blind_start.html", {"catalogs": catalogs, "categories": categories})


@require_GET
@reviewers_only
def blind_label(request):
    try:
        selection = _selection(request.GET)
        after = _id(request.GET, "after")
    except SelectionError as exc:
        return bad_request(request, f"Cannot start blind labelling: {exc}")
    return _label_page(request, selection, selection.next_product(after))


@require_POST
@reviewers_only
def blind_save(request, product_id: int):
    product = get_object_or_404(Product.objects.select_related("category"), pk=product_id)
    try:
        selection = _selection(request.POST)
        schema_id = _id(request.POST, "schema")
    except SelectionError as exc:
        return bad_request(request, f"Cannot save the labels: {exc}")
    typed = {a.name: request.POST.get(f"attr-{a.pk}", "") for a in fields_of(product)}
    try:
        do_blind_label(product, schema_id, typed, request.user)
    except BlindLabelError as exc:
        return _label_page(request, selection, product, typed, exc.errors, status=400)
    except AlreadyLabelled as exc:
        messages.warning(request, str(exc))
        return redirect(_label_url(selection, product.pk))
    messages.success(request, f"Saved the labels of {product.sku}.")
    return redirect(_label_url(selection, product.pk))
