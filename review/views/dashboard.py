"""The quality dashboard: F1 against honest gold (with its interval, the gold it rests on, and the
calibration of the confidences) per attribute and category, speed and cost, per run."""

import json
from decimal import Decimal

from django.db.models import Count
from django.http import StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET

from extraction.models import Run
from review import quality
from review.ave import gold_records
from review.charts import grouped_bars, reliability_diagram
from review.models import GoldValue
from review.views.common import reviewers_only, settings_of
from slotwise.error_pages import bad_request
from slotwise.params import ParameterError, optional_id, optional_price

# The per-attribute chart shows the attributes with the most gold: a bar needs gold to mean anything,
# and dozens of attributes with a handful of pairs each made a chart of dashes. The table has all.
CHART_MAX_GROUPS = 12
PRICE_FIELDS = {quality.GPU: "price", quality.CPU: "cpu_price"}


def _price_field(request, field: str, fallback: Decimal) -> Decimal:
    price = optional_price(request.GET, field)
    return fallback if price is None else price


def _prices(request) -> dict[str, Decimal]:
    """Hourly price per device kind: from the page's fields, else (GPU) the user's saved price, else
    the installation's settings."""
    defaults = quality.default_prices()
    saved = settings_of(request.user).gpu_price_per_hour
    if saved is not None:
        defaults[quality.GPU] = saved
    return {kind: _price_field(request, field, defaults[kind]) for kind, field in PRICE_FIELDS.items()}


def _breakdown(columns, key: str):
    """Rows of (name, [counts per column]) over the union of names, sorted."""
    names = sorted({name for c in columns for name in getattr(c.report, key)})
    return [(name, [getattr(c.report, key).get(name) for c in columns]) for name in names]


def _best_covered(rows):
    """The rows with the most gold pairs (the most any one run is scored on), at most
    CHART_MAX_GROUPS, each label carrying that count; rows without gold in any column are left out."""
    pairs = [(max((k.pairs for k in counts if k), default=0), name, counts) for name, counts in rows]
    kept = sorted((p for p in pairs if p[0]), key=lambda p: (-p[0], p[1]))[:CHART_MAX_GROUPS]
    return [(f"{name} ({n})", counts) for n, name, counts in kept], len(pairs) - len(kept)


def _series_names(columns) -> list[str]:
    return [f"{c.run.get_decoder_display().split(' ')[0]} (run {c.run.pk})" for c in columns]


def _f1_chart(title: str, rows, columns):
    shown, hidden = _best_covered(rows)
    if hidden:
        title += f" (the {len(shown)} with the most gold; all in the table below)"
    return grouped_bars(
        title,
        [label for label, _ in shown],
        [
            (name, [counts[i].f1 if counts[i] and counts[i].pairs else None for _, counts in shown])
            for i, name in enumerate(_series_names(columns))
        ],
        scale=1.0,
    )


def _charts(columns, attributes, categories):
    names = _series_names(columns)
    charts = [
        _f1_chart("Micro F1 per attribute", attributes, columns),
        _f1_chart("Micro F1 per category", categories, columns),
        grouped_bars(
            "Products per second",
            ["speed"],
            [(names[i], [c.speed.products_per_second]) for i, c in enumerate(columns)],
            fmt="{:.1f}",
        ),
        grouped_bars(
            "Cost per 1,000 products, on the device each run used",
            ["cost"],
            [(names[i], [c.speed.cost_per_1000]) for i, c in enumerate(columns)],
            fmt="${:.3f}",
        ),
    ]
    return [chart for chart in charts if chart.groups]


def _reliability(columns):
    return [
        reliability_diagram(
            f"Reliability, {name}",
            c.calibration.bins,
            note=f"{c.calibration.values} values",
            series=i,
            run_pk=c.run.pk,
        )
        for i, (name, c) in enumerate(zip(_series_names(columns), columns, strict=True))
    ]


@require_GET
@reviewers_only
def dashboard(request):
    try:
        prices = _prices(request)
    except ParameterError as exc:
        return bad_request(request, f"Cannot price the runs: {exc}")
    try:
        run_id, compare_id = (optional_id(request.GET, name) for name in ("run", "compare"))
    except ParameterError as exc:
        return bad_request(request, f"Cannot show the run: {exc}")
    runs = Run.objects.filter(values__isnull=False).distinct().order_by("-created_at", "-id")
    run = runs.filter(pk=run_id).first() if run_id is not None else runs.first()
    labels = dict(GoldValue.Provenance.choices)
    gold_kinds = [
        (labels[row["provenance"]], row["n"])
        for row in GoldValue.objects.values("provenance").annotate(n=Count("id")).order_by("-n")
    ]
    context = {
        "runs": runs[:100],
        "run": run,
        "prices": prices,
        "gold_count": sum(n for _, n in gold_kinds),
        "gold_kinds": gold_kinds,
    }
    other = runs.filter(pk=compare_id).first() if compare_id is not None else None
    if compare_id is not None and other is None:
        return bad_request(request, f"compare: there is no run #{compare_id} with values")
    context["other"] = other
    if run is not None:
        if other is not None:
            scope, columns = quality.compared(run, other, prices)
            context["scope"] = scope
        else:
            columns = quality.comparison(run, prices)
        attributes, categories = _breakdown(columns, "per_attribute"), _breakdown(columns, "per_category")
        context.update(
            columns=columns,
            attributes=attributes,
            categories=categories,
            charts=_charts(columns, attributes, categories),
            reliability=_reliability(columns),
        )
    return render(request, "review/dashboard.html", context)


@require_GET
@reviewers_only
def gold_download(request):
    """All gold as AVE JSON lines (what `manage.py export_gold` writes), for fine-tuning."""
    lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in gold_records())
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, "gold-ave.jsonl")
    return response
