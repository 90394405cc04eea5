"""The quality dashboard: F1 against gold per attribute and category, speed and cost, per run."""

import json
from decimal import Decimal, InvalidOperation

from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from extraction.models import Run
from review import quality
from review.ave import gold_records
from review.charts import grouped_bars
from review.models import GoldValue
from review.views.common import bad_request, reviewers_only, settings_of

MAX_PRICE = Decimal("10000")


def _price(request) -> Decimal:
    """The GPU price per hour: from the page's field, else the user's setting, else the default."""
    raw = (request.GET.get("price") or "").strip()
    if raw:
        try:
            price = Decimal(raw)
        except InvalidOperation:
            raise ValueError(f"price: {raw!r} is not a number") from None
        if not Decimal(0) <= price <= MAX_PRICE:
            raise ValueError(f"price: {raw} is outside 0 to {MAX_PRICE} per hour")
        return price
    saved = settings_of(request.user).gpu_price_per_hour
    return saved if saved is not None else quality.default_price()


def _breakdown(columns, key: str):
    """Rows of (name, [counts per column]) over the union of names, sorted."""
    names = sorted({name for c in columns for name in getattr(c.report, key)})
    return [(name, [getattr(c.report, key).get(name) for c in columns]) for name in names]


def _charts(columns, attributes, categories, price):
    series_name = [f"{c.run.get_decoder_display().split(' ')[0]} (run {c.run.pk})" for c in columns]

    def f1s(rows, i):
        return [counts[i].f1 if counts[i] else None for _, counts in rows]

    charts = [
        grouped_bars(
            "Micro F1 per attribute",
            [n for n, _ in attributes],
            [(series_name[i], f1s(attributes, i)) for i in range(len(columns))],
            scale=1.0,
        ),
        grouped_bars(
            "Micro F1 per category",
            [n for n, _ in categories],
            [(series_name[i], f1s(categories, i)) for i in range(len(columns))],
            scale=1.0,
        ),
        grouped_bars(
            "Products per second",
            ["speed"],
            [(series_name[i], [c.speed.products_per_second]) for i, c in enumerate(columns)],
            fmt="{:.1f}",
        ),
        grouped_bars(
            f"Cost per 1,000 products at ${price}/h",
            ["cost"],
            [(series_name[i], [c.speed.cost_per_1000]) for i, c in enumerate(columns)],
            fmt="${:.3f}",
        ),
    ]
    return [chart for chart in charts if chart.groups]


@require_GET
@reviewers_only
def dashboard(request):
    try:
        price = _price(request)
    except ValueError as exc:
        return bad_request(f"Cannot price the runs: {exc}")
    runs = Run.objects.filter(values__isnull=False).distinct().order_by("-created_at", "-id")
    raw_run = request.GET.get("run", "")
    if raw_run and not raw_run.isdigit():
        return bad_request(f"run: expected a number, got {raw_run!r}")
    run = runs.filter(pk=int(raw_run)).first() if raw_run else runs.first()
    context = {"runs": runs[:100], "run": run, "price": price, "gold_count": GoldValue.objects.count()}
    if run is not None:
        columns = quality.comparison(run, float(price))
        attributes, categories = _breakdown(columns, "per_attribute"), _breakdown(columns, "per_category")
        context.update(
            columns=columns,
            attributes=attributes,
            categories=categories,
            charts=_charts(columns, attributes, categories, price),
        )
    return render(request, "review/dashboard.html", context)


@require_GET
@reviewers_only
def gold_download(request):
    """All gold as AVE JSON lines (what `manage.py export_gold` writes), for fine-tuning."""
    lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in gold_records())
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="gold-ave.jsonl"'
    return response
