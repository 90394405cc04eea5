"""Product browser: filtered, paginated list and one product's page."""

from django.core.paginator import Paginator
from django.db.models import Count, F, Q
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from accounts.roles import ADMIN, REVIEWER, has_role, role_required
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


# Who may change a value's review: the review app's reviewers_only (review/views/common.py), which
# the catalog cannot import; tests/catalog/test_product_page.py checks the two agree.
REVIEW_ROLES = (ADMIN, REVIEWER)
ALL_RUNS = "all"


def runs_of(values: list) -> list:
    """The runs that wrote `values`, newest first, each once."""
    runs = {value.run_id: value.run for value in values}
    return sorted(runs.values(), key=lambda run: (run.created_at, run.pk), reverse=True)


def picked_run(request, runs: list) -> int | None:
    """The run the page shows (?run=<id>), the newest by default; None for every run (?run=all).
    Raises ParameterError for a run that wrote nothing on this product."""
    if request.GET.get("run", "").strip() == ALL_RUNS:
        return None
    chosen = optional_id(request.GET, "run")
    if chosen is None:
        return runs[0].pk if runs else None
    if chosen not in {run.pk for run in runs}:
        wrote = ", ".join(f"#{run.pk}" for run in runs) or "none"
        raise ParameterError(f"run: run #{chosen} wrote no value of this product (runs that did: {wrote})")
    return chosen


@require_GET
@role_required(ADMIN, REVIEWER)
def product_detail(request, pk: int):
    product = get_object_or_404(Product.objects.select_related("catalog", "category"), pk=pk)
    schema = product.category.current_schema
    # Every run's values, newest run first, each with its review and how its state was made.
    values = list(product.extracted_values.for_product_page().order_by("-run__created_at", "-run_id"))
    runs = runs_of(values)
    try:
        run_id = picked_run(request, runs)
    except ParameterError as exc:
        return bad_request(request, f"Cannot show the product: {exc}")
    extracted: dict[str, list] = {}
    for value in values:
        if run_id is None or value.run_id == run_id:
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
    context = {
        "product": product,
        "schema": schema,
        "attributes": attributes,
        "other_known": other_known,
        "runs": runs,
        "run_id": run_id,
        "all_runs": ALL_RUNS,
        "can_review": has_role(request.user, *REVIEW_ROLES),
    }
    return render(request, "catalog/product_detail.html", context)
