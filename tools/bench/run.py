"""`manage.py bench_run`: products per second end to end (queue -> worker -> PostgreSQL) beside the engine alone.

    .venv/bin/python manage.py bench_run --products 1000             # the demo catalog's products
    .venv/bin/python manage.py bench_run --catalog synthetic          # one synthetic schema

The products are the demo catalog's real titles, 10 categories with a schema each, taken one
category after the other (tools/bench/catalogs.py; past its 400 products the titles repeat), or the fault
drill's synthetic sneakers (one schema, 3 attributes).

The engine alone decodes the same products in this process, in the same batches the worker leases
(same model, device, decoder and stacking); the end-to-end figure is one real Celery worker process
working through a run, from the moment the run is queued to the moment its last values are
committed. Both sides are warmed first (model loaded, layout measured), so the difference is the
queue and the database. On a shared machine other processes slow either side at random, so the two
are measured in turns (engine, run, engine, run, ... --repeats times) and the best of each compared;
the run's own split (seconds inside the engine against its wall time) is printed too. Prints a small
table and one JSON line; exits 1 when the overhead is 15% or more.
"""

import json
import time

from django.conf import settings
from django.core.management.base import CommandError

from extraction import config
from extraction.models import Run
from extraction.services import RunRequest, do_start_run
from tools import worker_processes
from tools.bench.catalogs import demo_bench_catalog
from tools.drill.catalog import drill_catalog

MAX_OVERHEAD = 0.15


def bench_run(
    products: int, batch_size, stack, decoder: str, repeats: int, timeout: float, catalog: str, write
) -> float:
    """Write the table and the JSON line; returns the overhead (1 - end to end / engine alone)."""
    batch_size = batch_size or settings.EXTRACTION_BATCH_SIZE
    source = catalog
    if source == "demo":
        catalog = demo_bench_catalog(f"Bench demo ({products} products)", products)
        # a batch of each category: every schema's layout probe and prefix happen in the warm-up
        warmup_size = batch_size * catalog.products.values("category").distinct().count()
        warmup = demo_bench_catalog(f"Bench demo warm-up ({warmup_size})", warmup_size)
    else:
        catalog = drill_catalog(f"Bench ({products} products)", products)
        warmup = drill_catalog(f"Bench warm-up ({batch_size} products)", batch_size)
    request = {"decoder": decoder, "batch_size": batch_size, "stack": stack}

    log_dir = settings.BASE_DIR / ".data" / "bench"
    engine_rates, runs = [], []
    # The worker ends with this command, however it ends (a timeout's SIGTERM, Ctrl-C, an error).
    with worker_processes.running_worker("bench-w1", log_dir):
        _run(RunRequest(catalog=warmup, name="Bench warm-up", **request), timeout)
        for turn in range(1, max(1, repeats) + 1):
            engine_rates.append(_engine_alone(catalog, request))
            runs.append(_run(RunRequest(catalog=catalog, name=f"Bench {turn}", **request), timeout))
    walls = {run.id: (run.finished_at - run.created_at).total_seconds() for run in runs}
    run = min(runs, key=lambda r: walls[r.id])
    engine_rate = max(engine_rates)
    end_to_end = run.done / walls[run.id]
    overhead = 1 - end_to_end / engine_rate
    in_engine = run.engine_seconds / walls[run.id]
    passes = ", ".join(f"{rate:.2f}" for rate in engine_rates)
    runs_text = ", ".join(f"{r.done / walls[r.id]:.2f}" for r in runs)
    write(f"{'':24}{'products/s':>12}   passes\n{'engine alone':24}{engine_rate:12.2f}   {passes}\n")
    write(f"{'end to end (queue->PG)':24}{end_to_end:12.2f}   {runs_text}\n")
    write(
        f"overhead {overhead:.1%} (best against best); the run spent {in_engine:.1%} of its wall time in the engine\n"
    )
    write(
        json.dumps(
            {
                "products": products,
                "catalog": source,
                "categories": catalog.products.values("category").distinct().count(),
                "decoder": decoder,
                "engine_decoder": Run.ENGINE_DECODERS[decoder],
                "batch_size": batch_size,
                "stack": stack,
                "engine_products_per_second": round(engine_rate, 3),
                "end_to_end_products_per_second": round(end_to_end, 3),
                "overhead": round(overhead, 4),
                "run_time_in_engine": round(in_engine, 4),
                "engine_passes": [round(rate, 3) for rate in engine_rates],
                "end_to_end_passes": [round(r.done / walls[r.id], 3) for r in runs],
                "run": run.id,
                "failed": run.failed,
            }
        )
    )
    return overhead


def _engine_alone(catalog, request: dict) -> float:
    """The engine on the same products, in this process, in the worker's batches: a lease holds
    products of one schema, in id order (WorkItem's lease order)."""
    from extraction.engine.api import Document
    from runner import decoding

    extractor = decoding.extractor_for(config.BUNDLED, settings.SLOTWISE_DEVICE)
    products = list(catalog.products.select_related("category").order_by("id"))
    schema_of: dict[int, int] = {}  # category -> its current schema, as the run froze it
    by_schema: dict[int, list] = {}
    for p in products:
        if p.category_id not in schema_of:
            schema_of[p.category_id] = p.category.current_schema.id
        by_schema.setdefault(schema_of[p.category_id], []).append(p)
    size = request["batch_size"]
    batches = [
        (schema_id, group[i : i + size])
        for schema_id, group in sorted(by_schema.items())
        for i in range(0, len(group), size)
    ]
    attributes = {schema_id: decoding.attribute_specs(schema_id) for schema_id in by_schema}

    def decode(schema_id, batch):
        docs = [Document(p.sku, p.document) for p in batch]
        # the engine decoder the worker decodes the run with (an AR run: ar-honest), not the run's name
        decoder = Run.ENGINE_DECODERS[request["decoder"]]
        extractor.extract(docs, attributes[schema_id], decoder=decoder, stack=request["stack"])

    for schema_id, group in by_schema.items():  # warm-up: each schema's layout probe and prefix
        decode(schema_id, group[:size])
    started = time.perf_counter()
    for schema_id, batch in batches:
        decode(schema_id, batch)
    return len(products) / (time.perf_counter() - started)


def _run(request: RunRequest, timeout: float) -> Run:
    run = do_start_run(request)[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if not run.is_active:
            if run.status != Run.Status.DONE:
                raise CommandError(f"run {run.id} ended {run.status}: {run.error}")
            return run
        time.sleep(0.5)
    raise CommandError(f"run {run.id} did not finish within {timeout:.0f}s; see .data/bench/bench-w1.log")
