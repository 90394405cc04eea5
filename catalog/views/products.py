"""Product browser: filtered, paginated list and one product's page."""

from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, REVIEWER, role_required
from catalog.models import Catalog, Category, Product
from catalog.schemas import current_attributes
from slotwise.error_pages import bad_request
from slotwise.params import ParameterError, choice, optional_id

PRODUCTS_PER_PAGE = 50
# The review filter's values (in the URL) and their labels. "needs-review": a value of any run still
# pending; "reviewed": values, none pending (a product no run has read yet is in neither).
REVIEW_FILTERS = {"all": "All", "needs-review": "Needs review", "reviewed": "Fully reviewed"}
# review.ValueReview's statuses, by name: the catalog sits below the review app and cannot import it.
PENDING, CORRECTED = "pending", "corrected"


def with_review_counts(products):
    """Each product's values (of every run), how many are reviewed and how many corrected: counted
    in the list's own query, never one query per product."""
    return products.annotate(
        value_count=Count("extracted_values"),
        pending_count=Count("extracted_values", filter=Q(extracted_values__review__status=PENDING)),
        corrected_count=Count("extracted_values", filter=Q(extracted_values__review__status=CORRECTED)),
        reviewed_count=F("value_count") - F("pending_count"),
    )


@require_GET
@role_required(ADMIN, REVIEWER)
def product_list(request):
    try:
        catalog_id, category_id = (optional_id(request.GET, name) for name in ("catalog", "category"))
        review = choice(request.GET, "review", tuple(REVIEW_FILTERS), default="all")
    except ParameterError as exc:
        return bad_request(request, f"Cannot filter the products: {exc}")
    query = request.GET.get("q", "").strip()
    products = Product.objects.select_related("catalog", "category").order_by("catalog__name", "sku")
    if catalog_id:
        products = products.filter(catalog_id=catalog_id)
    if category_id:
        products = products.filter(category_id=category_id)
    if query:
        products = products.filter(
            Q(title__icontains=query) | Q(sku__iexact=query) | Q(description__icontains=query)
        )
    products = with_review_counts(products)
    if review == "needs-review":
        products = products.filter(pending_count__gt=0)
    elif review == "reviewed":
        products = products.filter(value_count__gt=0, pending_count=0)
    page = Paginator(products, PRODUCTS_PER_PAGE).get_page(request.GET.get("page"))
    filters = request.GET.copy()
    filters.pop("page", None)
    context = {
        "page": page,
        "catalogs": Catalog.objects.all(),
        "categories": Category.objects.all(),
        "catalog_id": catalog_id,
        "category_id": category_id,
        "query": query,
        "review": review,
        "review_filters": REVIEW_FILTERS,
        "filter_query": filters.urlencode(),
    }
    template = (
        "catalog/_product_results.html"
        if request.htmx and not request.htmx.boosted
        else "catalog/product_list.html"
    )
    return render(request, template, context)


@require_GET
@role_required(ADMIN, REVIEWER)
def product_detail(request, pk: int):
    product = get_object_or_404(Product.objects.select_related("catalog", "category"), pk=pk)
    schema = product.category.current_schema
    extracted: dict[str, list] = {}
    for value in product.extracted_values.select_related("run", "attribute", "review").order_by(
        "-run__created_at"
    ):
        extracted.setdefault(value.attribute.name.lower(), []).append(value)
    attributes = []
    for data in current_attributes(schema):
        attributes.append(
            {
                "spec": data,
                "known": product.known_values.get(data.name, ""),
                "extracted": extracted.pop(data.name.lower(), []),
            }
        )
    in_schema = {a["spec"].name for a in attributes}
    other_known = {k: v for k, v in product.known_values.items() if k not in in_schema}
    return render(
        request,
        "catalog/product_detail.html",
        {"product": product, "schema": schema, "attributes": attributes, "other_known": other_known},
    )
