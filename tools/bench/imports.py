"""`manage.py bench_import`: the CSV import benchmark: generate a CSV, import it through the real path, print rows/s and memory.

    manage.py bench_import --rows 100000

The import runs exactly as a worker runs it (run_import: file checks, row checks, batched upserts in
one transaction, progress on its own connection). A second pass re-imports the same file, so every
row becomes an update. The bench catalog is deleted afterwards unless --keep is given.
"""

import csv
import resource
import tempfile
import time
from pathlib import Path

from django.core.files import File
from django.db import transaction

from catalog.imports.map import guess_mapping
from catalog.imports.read import inspect_file
from catalog.imports.run import run_import
from catalog.models import Catalog, Category, ImportJob
from catalog.schemas import AttributeData, do_import_schema

BENCH_CATALOG = "bench-import"
BENCH_CATEGORY = "Bench TV"
COLOURS = ["black", "silver", "white", "blue", "red"]
BRANDS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Soylent"]
GOAL_ROWS_PER_SECOND = 5000
GOAL_PEAK_BYTES = 1024**3


def write_csv(path: Path, rows: int) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sku", "title", "description", "category", "brand", "colour"])
        for n in range(rows):
            brand, colour = BRANDS[n % len(BRANDS)], COLOURS[n % len(COLOURS)]
            size = 32 + n % 50
            writer.writerow(
                [
                    f"BENCH-{n:08d}",
                    f"{brand} {size} inch 4K UHD Smart TV, {colour}, model X{n % 997}",
                    f"A {size}-inch television by {brand} with HDR and three HDMI ports. Colour: {colour}.",
                    BENCH_CATEGORY,
                    brand,
                    colour,
                ]
            )


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def bench_import(rows: int, keep: bool, write, write_error) -> None:
    """Generate, import twice, report; the bench catalog is deleted afterwards unless `keep`."""
    _ensure_category()
    Catalog.objects.filter(name=BENCH_CATALOG).delete()
    catalog = Catalog.objects.create(name=BENCH_CATALOG, description="Created by manage.py bench_import")
    with tempfile.TemporaryDirectory(prefix="slotwise-bench-") as folder:
        path = Path(folder) / "bench.csv"
        started = time.perf_counter()
        write_csv(path, rows)
        write(
            f"generated {rows:,} rows ({path.stat().st_size / 1024 / 1024:.1f} MB) "
            f"in {time.perf_counter() - started:.1f}s"
        )
        rates = []
        for label in ("first import (all new)", "re-import (all updates)"):
            job = _queued_job(catalog, path)
            started = time.perf_counter()
            job = run_import(job.pk)
            seconds = time.perf_counter() - started
            if job.status != ImportJob.Status.DONE:
                write_error(f"{label}: failed: {job.message}")
                return
            rates.append(rows / seconds)
            write(
                f"{label}: {rows:,} rows in {seconds:.2f}s = {rows / seconds:,.0f} rows/s "
                f"(created {job.created_count:,}, updated {job.updated_count:,}, skipped {job.skipped_count:,})"
            )
    peak = peak_rss_bytes()
    write(f"peak memory (max RSS of this process): {peak / 1024 / 1024:.0f} MiB")
    write(
        f"goals: >= {GOAL_ROWS_PER_SECOND:,} rows/s: {'met' if min(rates) >= GOAL_ROWS_PER_SECOND else 'MISSED'} "
        f"(slowest pass {min(rates):,.0f} rows/s); < {GOAL_PEAK_BYTES / 1024**3:.0f} GiB peak: "
        f"{'met' if peak < GOAL_PEAK_BYTES else 'MISSED'}"
    )
    for job in catalog.imports.all():
        job.file.delete(save=False)  # the copies of the generated file
    if not keep:
        Catalog.objects.filter(pk=catalog.pk).delete()


def _ensure_category() -> None:
    if Category.objects.filter(name=BENCH_CATEGORY).exists():
        return
    attributes = [
        AttributeData("Brand", "The brand."),
        AttributeData("Colour", "The colour.", max_tokens=4),
    ]
    do_import_schema(
        {"category": BENCH_CATEGORY, "attributes": [a.__dict__ for a in attributes]},
        user=None,
    )


def _queued_job(catalog: Catalog, path: Path) -> ImportJob:
    file_format = inspect_file(path, path.name)
    mapping = guess_mapping(file_format.header, ["Brand", "Colour"])
    with transaction.atomic(), path.open("rb") as f:
        job = ImportJob(
            catalog=catalog,
            original_name=path.name,
            size_bytes=path.stat().st_size,
            encoding=file_format.encoding,
            delimiter=file_format.delimiter,
            header=file_format.header,
            mapping=mapping.to_json(),
            status=ImportJob.Status.QUEUED,
        )
        job.file.save("bench.csv", File(f), save=False)
        job.save()
    return job
