"""Export values as CSV or JSON, wide or long: the approved ones (accepted and corrected), or every
value as it stands.

Wide: one row per product, two columns per attribute: the approved value, normalized (an
enumeration's spelling, a number in the schema's unit), and beside it "<name> (raw)", the text the
model wrote before normalization (ExtractedValue.raw_text; a correction replaces the value, not
that text). Long: one row per value, with the model's normalized value and its raw text side by side.
A value accepted as the model wrote it although the model filled its token budget (it may be cut
short) is marked: "cut" in long rows, the attribute named in the wide row's cut column.
The export of values as they stand takes every value of the filter whatever its review, and says
each one's state (ValueReview.state_of: pending, accepted, auto-accepted, accepted in bulk,
corrected, n/a, rejected) in a "state" column (long) or a "<name> (state)" column (wide); its value
is the one a reader sees (the reviewer's when approved, the model's while pending), none for a
rejected one (the model's stays in model_value / "<name> (raw)").
Every CSV cell goes through catalog.csv_safety.safe_cell so a spreadsheet never runs a formula.
Small exports stream back in the request; larger ones become an ExportJob written in the
background on the `light` queue, with progress and a download link.
"""

import csv
import io
import json
import tempfile
from collections.abc import Callable, Iterator

from django.conf import settings
from django.core.files import File
from django.db.models import Subquery
from django.utils import timezone

from catalog.csv_safety import safe_row
from review.filters import QueueFilter
from review.gold import standing_changes
from review.models import APPROVED, ExportJob, ValueReview

Values = ExportJob.Values

LONG_COLUMNS = [
    "run",
    "catalog",
    "sku",
    "title",
    "category",
    "attribute",
    "value",
    "status",
    "model_value",
    "model_raw",
    "cut",
    "confidence",
    "reviewed_by",
    "reviewed_at",
]
# The export of values as they stand says each value's state beside its status.
STANDING_COLUMNS = [
    *LONG_COLUMNS[: LONG_COLUMNS.index("status") + 1],
    "state",
    *LONG_COLUMNS[LONG_COLUMNS.index("status") + 1 :],
]
PRODUCT_COLUMNS = ["catalog", "sku", "title", "category"]
# A value the model cut short (it filled its token budget) that was accepted as it is says so:
# long rows carry CUT in "cut", wide rows name such attributes in CUT_COLUMN ("cut" in JSON).
CUT = "cut by the token budget"
CUT_COLUMN = "cut by the token budget"
PROGRESS_EVERY = 1000


def inline_limit() -> int:
    """Exports of up to this many values are written within the request."""
    return settings.REVIEW_EXPORT_INLINE_LIMIT


def approved(queue_filter: QueueFilter):
    """The approved values the filter matches (its status choice is replaced by 'approved')."""
    return queue_filter.values().filter(review__status__in=APPROVED)


def selected(queue_filter: QueueFilter, values: str = Values.APPROVED):
    """The values an export takes: the approved ones, or every one the filter matches."""
    return approved(queue_filter) if values == Values.APPROVED else queue_filter.values()


def columns(values: str) -> list[str]:
    return LONG_COLUMNS if values == Values.APPROVED else STANDING_COLUMNS


def standing_value(status: str, reviewed: str, model_value: str) -> str:
    """What a value stands as: the reviewer's when approved, the model's while pending, none once
    rejected (nobody said what is right)."""
    if status == ValueReview.Status.REJECTED:
        return ""
    return reviewed if status in APPROVED else model_value


def _long_records(queue_filter: QueueFilter, values: str = Values.APPROVED) -> Iterator[dict]:
    standing = values == Values.STANDING
    rows = selected(queue_filter, values).order_by(
        "product__catalog__name", "product__sku", "attribute__position", "pk"
    )
    how_made = []
    if standing:  # how each state was made: its newest change still standing, and that bulk action's filter
        rows = rows.annotate(
            made_by=Subquery(standing_changes().values("action")[:1]),
            bulk_filters=Subquery(standing_changes().values("bulk__filters")[:1]),
        )
        how_made = ["made_by", "bulk_filters"]
    rows = rows.values_list(
        "run_id",
        "product__catalog__name",
        "product__sku",
        "product__title",
        "product__category__name",
        "attribute__name",
        "review__reviewed_value",
        "review__status",
        "value",
        "raw_text",
        "truncated",
        "confidence",
        "review__reviewed_by__username",
        "review__reviewed_at",
        *how_made,
    )
    for row in rows.iterator(chunk_size=2000):
        record = dict(zip(LONG_COLUMNS, row[: len(LONG_COLUMNS)], strict=True))
        # The exported value is the model's, and the model ran out of its token budget writing it.
        models_own = (ValueReview.Status.ACCEPTED, ValueReview.Status.PENDING)
        record["cut"] = CUT if record["cut"] and record["status"] in models_own else ""
        record["reviewed_at"] = record["reviewed_at"].isoformat() if record["reviewed_at"] else ""
        record["reviewed_by"] = record["reviewed_by"] or ""
        if standing:
            made_by, bulk_filters = row[len(LONG_COLUMNS) :]
            record["state"] = ValueReview.state_of(record["status"], record["value"], made_by, bulk_filters)
            record["value"] = standing_value(record["status"], record["value"], record["model_value"])
        yield {column: record[column] for column in columns(values)}


def _wide_records(queue_filter: QueueFilter, values: str = Values.APPROVED) -> Iterator[dict]:
    """One record per product: its values keyed by attribute name (ordered by product); with their
    states ("states") in the export of values as they stand."""
    standing = values == Values.STANDING
    current: dict | None = None
    for record in _long_records(queue_filter, values):
        key = (record["catalog"], record["sku"])
        if current is None or current["_key"] != key:
            if current is not None:
                yield current
            current = {
                "_key": key,
                **{c: record[c] for c in PRODUCT_COLUMNS},
                "values": {},
                "raw": {},
                **({"states": {}} if standing else {}),
                "cut": [],
            }
        current["values"][record["attribute"]] = record["value"]
        current["raw"][record["attribute"]] = record["model_raw"]
        if standing:
            current["states"][record["attribute"]] = record["state"]
        if record["cut"]:
            current["cut"].append(record["attribute"])
    if current is not None:
        yield current


def raw_column(name: str) -> str:
    return f"{name} (raw)"


def state_column(name: str) -> str:
    return f"{name} (state)"


def attribute_names(queue_filter: QueueFilter, values: str = Values.APPROVED) -> list[str]:
    """The wide file's attribute columns, in schema order."""
    names = (
        selected(queue_filter, values)
        .order_by("attribute__position", "attribute__name")
        .values_list("attribute__name", flat=True)
    )
    return list(dict.fromkeys(names))


def write_export(
    out: io.TextIOBase,
    queue_filter: QueueFilter,
    fmt: str,
    shape: str,
    progress: Callable[[int], None] | None = None,
    values: str = Values.APPROVED,
) -> int:
    """Write the export of `values` (approved, or every one as it stands) to `out`; returns how
    many values went in."""
    count = 0

    def tick(n: int) -> None:
        nonlocal count
        count += n
        if progress and count % PROGRESS_EVERY < n:
            progress(count)

    if shape == ExportJob.Shape.LONG:
        records = _long_records(queue_filter, values)
        if fmt == ExportJob.Format.CSV:
            writer = csv.writer(out)
            writer.writerow(safe_row(columns(values)))
            for record in records:
                writer.writerow(safe_row(record.values()))
                tick(1)
        else:
            _write_json_list(out, records, tick, lambda r: 1)
    else:
        records = _wide_records(queue_filter, values)
        if fmt == ExportJob.Format.CSV:
            names = attribute_names(queue_filter, values)
            standing = values == Values.STANDING
            writer = csv.writer(out)
            header = [
                column
                for n in names
                for column in (n, raw_column(n), *([state_column(n)] if standing else []))
            ]
            writer.writerow(
                safe_row(PRODUCT_COLUMNS + header + [CUT_COLUMN])
            )  # attribute names are user text too
            for record in records:
                cells = [
                    cell
                    for n in names
                    for cell in (
                        record["values"].get(n, ""),
                        record["raw"].get(n, ""),
                        *([record["states"].get(n, "")] if standing else []),
                    )
                ]
                cut = "; ".join(record["cut"])
                writer.writerow(safe_row([record[c] for c in PRODUCT_COLUMNS] + cells + [cut]))
                tick(len(record["values"]))
        else:
            _write_json_list(
                out,
                ({k: v for k, v in r.items() if k != "_key"} for r in records),
                tick,
                lambda r: len(r["values"]),
            )
    return count


def _write_json_list(out, records, tick, size) -> None:
    """A JSON array written one record at a time, so a large export never sits in memory whole."""
    out.write("[")
    for i, record in enumerate(records):
        out.write(",\n" if i else "\n")
        out.write(json.dumps(record, ensure_ascii=False))
        tick(size(record))
    out.write("\n]\n")


def check_choice(fmt: str, shape: str, values: str = Values.APPROVED) -> None:
    if fmt not in ExportJob.Format.values:
        raise ValueError(f"format: {fmt!r} is not one of {', '.join(ExportJob.Format.values)}")
    if shape not in ExportJob.Shape.values:
        raise ValueError(f"shape: {shape!r} is not one of {', '.join(ExportJob.Shape.values)}")
    if values not in Values.values:
        raise ValueError(f"values: {values!r} is not one of {', '.join(Values.values)}")


def do_create_export(
    queue_filter: QueueFilter, fmt: str, shape: str, user, values: str = Values.APPROVED
) -> ExportJob:
    check_choice(fmt, shape, values)
    return ExportJob.objects.create(
        created_by=user,
        format=fmt,
        shape=shape,
        values=values,
        filters=queue_filter.as_params(),
        total=selected(queue_filter, values).count(),
    )


def run_export(job_id: int) -> ExportJob | None:
    """Write an export job's file under MEDIA_ROOT and mark it done. Safe to rerun."""
    job = ExportJob.objects.filter(pk=job_id).first()
    if job is None or job.finished:
        return job
    ExportJob.objects.filter(pk=job.pk).update(status=ExportJob.Status.RUNNING, done=0)
    queue_filter = QueueFilter.from_params(job.filters)
    with tempfile.TemporaryFile("w+", encoding="utf-8", newline="") as tmp:
        written = write_export(
            tmp,
            queue_filter,
            job.format,
            job.shape,
            progress=lambda n: ExportJob.objects.filter(pk=job.pk).update(done=n),
            values=job.values,
        )
        tmp.seek(0)
        job.file.save(job.filename, File(tmp), save=False)
    ExportJob.objects.filter(pk=job.pk).update(
        file=job.file.name,
        done=written,
        total=written,
        status=ExportJob.Status.DONE,
        finished_at=timezone.now(),
    )
    job.refresh_from_db()
    return job


def mark_failed(job_id: int, error: str) -> None:
    ExportJob.objects.filter(pk=job_id).update(
        status=ExportJob.Status.FAILED, error=error[:2000], finished_at=timezone.now()
    )
