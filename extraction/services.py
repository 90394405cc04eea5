"""Starting, waking and cancelling extraction runs: the web side, which only enqueues work.

Each `do_*` function is one explicit transaction. A run's work is its WorkItem rows in PostgreSQL;
the wake-up messages sent here only tell workers that work exists. Workers lease, decode and record
through the runner package, which this module never imports (no import cycle); a run's progress is
read by extraction.progress.

A wake-up is a signal, `run_wakeup`, that the workers app answers with its GPU task (issue #32: no
loop between apps). workers/ sits above this app (its task runs the runner, which imports this
app), so this app names no task, not even by a string; the runner, called by that task, is handed
the task's own wake-up function instead (runner.loop.process_runs(wake=...)).
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models import Count, Q
from django.dispatch import Signal
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from catalog.models import Catalog, Category, Product, SchemaVersion
from extraction import config
from extraction.models import Run, WorkItem
from extraction.sizes import run_sizes
from registry.cache import run_model_dir, version_id_of
from registry.models import ModelVersion
from registry.versions import default_version, shipped_version

log = logging.getLogger(__name__)

# One wake-up message of a run: sent with run_id (sender Run), answered by workers.tasks (its receiver is
# connected when the workers app is ready). A receiver's broker error reaches kick_run, which logs it.
run_wakeup = Signal()

BOTH = "both"
DECODER_CHOICES = [(Run.Decoder.HPD, "HPD"), (Run.Decoder.AR, "AR"), (BOTH, "Both (two linked runs)")]


class RunRefused(ValueError):
    """The run cannot start as asked; the message says what to change. Nothing was stored."""


class AlreadyStarted(Exception):
    """The same user started the same run moments ago (a double-clicked "Start run"): `runs` are
    those, still queued or running; nothing new was stored."""

    def __init__(self, runs: list[Run]):
        super().__init__(f"{runs[0]} was started {timezone.now() - runs[0].created_at} ago")
        self.runs = runs


@dataclass(frozen=True)
class RunRequest:
    decoder: str  # "hpd", "ar" or "both"
    catalog: Catalog | None = None
    category: Category | None = None
    search: str = ""
    model_dir: str = config.BUNDLED
    batch_size: int | None = None
    stack: int | None = None  # documents per HPD prompt; None lets the engine choose
    name: str = ""


def selected_products(catalog=None, category=None, search: str = ""):
    products = Product.objects.all()
    if catalog is not None:
        products = products.filter(catalog=catalog)
    if category is not None:
        products = products.filter(category=category)
    if search.strip():
        term = search.strip()
        products = products.filter(
            Q(title__icontains=term) | Q(sku__iexact=term) | Q(description__icontains=term)
        )
    return products.order_by()


def current_schemas(products) -> dict[int, SchemaVersion]:
    """{category id: its latest schema version} for the categories of `products`.

    Refuses when a category has no schema or an empty one: its products would have nothing to extract.
    """
    counts = dict(products.values_list("category").annotate(n=Count("id")).values_list("category", "n"))
    schemas = {}
    missing = []
    for category in Category.objects.filter(id__in=counts):
        schema = category.current_schema
        if schema is None or not schema.attributes.exists():
            missing.append(f"'{category.name}' ({counts[category.id]} products)")
        else:
            schemas[category.id] = schema
    if missing:
        raise RunRefused(
            "These categories have no attribute schema yet, define one first or leave them out: "
            + ", ".join(sorted(missing))
        )
    return schemas


def _queue_work_items(run: Run, products, schemas: dict[int, SchemaVersion]) -> int:
    """INSERT ... SELECT one queued item per product, category by category (ids follow schemas)."""
    table = WorkItem._meta.db_table
    total = 0
    with connection.cursor() as cursor:
        for category_id, schema in sorted(schemas.items()):
            ids = products.filter(category_id=category_id).order_by("id").values_list("id", flat=True)
            sql, params = ids.query.sql_with_params()
            cursor.execute(
                f"INSERT INTO {table} (run_id, product_id, schema_id, status, lease_owner, attempts, error,"
                " writes, done_by)"
                f" SELECT %s, sub.id, %s, %s, '', 0, '', 0, '' FROM ({sql}) AS sub",
                [run.id, schema.id, WorkItem.Status.QUEUED, *params],
            )
            total += cursor.rowcount
    return total


def resolved_model(request: RunRequest) -> tuple[str, ModelVersion | None]:
    """(the run's model_dir, its stored version): a version chosen by id; the bundled choice means
    the catalog's default version (the shipped one unless a trained version was promoted); another
    model directory has no version."""
    version_id = version_id_of(request.model_dir)
    if version_id is not None:
        version = offered_trained().filter(pk=version_id).first()
        if version is None:
            raise RunRefused(
                f"Model version {version_id} is not offered (discarded or deleted): choose another."
            )
        return request.model_dir, version
    if request.model_dir == config.BUNDLED:
        version = default_version(request.catalog) if request.catalog is not None else shipped_version()
        return run_model_dir(version), version
    return request.model_dir, None


def offered_trained():
    return (
        ModelVersion.objects.defer("archive")
        .filter(kind=ModelVersion.Kind.TRAINED)
        .exclude(status=ModelVersion.Status.DISCARDED)
    )


def _recent_twins(request: RunRequest, decoders: list[str], user, window: timedelta) -> list[Run]:
    """The user's still-active runs of the same decoders, model and selection started within `window`.

    Call inside the start's transaction: the advisory lock on the selection makes a second request
    for it wait until the first has committed its run, so it sees that run (READ COMMITTED)."""
    key = f"start-run:{user.pk}:{','.join(decoders)}:{request.model_dir}:{request.catalog and request.catalog.pk}"
    key += f":{request.category and request.category.pk}:{request.search.strip()}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key])
    twins = Run.objects.filter(
        created_by=user,
        decoder__in=decoders,
        model_dir=request.model_dir,
        catalog=request.catalog,
        category=request.category,
        search=request.search.strip(),
        status__in=Run.ACTIVE_STATUSES,
        created_at__gte=timezone.now() - window,
    ).order_by("id")
    found = list(twins)
    return found if {run.decoder for run in found} >= set(decoders) else []


def do_start_run(request: RunRequest, user=None, once_within: timedelta | None = None) -> list[Run]:
    """Create the run (two linked runs for "both") with one queued item per selected product.

    `once_within`: raise AlreadyStarted instead when `user` started the same run (decoders, model,
    selection) that long ago or less and it is still active (the web form's double submit)."""
    decoders = [Run.Decoder.HPD, Run.Decoder.AR] if request.decoder == BOTH else [request.decoder]
    if any(decoder not in Run.Decoder.values for decoder in decoders):
        raise RunRefused(f"Unknown decoder {request.decoder!r}: choose hpd, ar or both.")
    products = selected_products(request.catalog, request.category, request.search)
    if not products.exists():
        raise RunRefused("No product matches this selection: widen the catalog, category or search.")
    model_dir, version = resolved_model(request)
    settings_used = {
        "batch_size": request.batch_size or settings.EXTRACTION_BATCH_SIZE,
        "stack": request.stack,
    }
    with transaction.atomic():
        if once_within is not None and user is not None:
            twins = _recent_twins(request, decoders, user, once_within)
            if twins:
                raise AlreadyStarted(twins)
        schemas = current_schemas(products)
        # each attribute's slot, at least what its data needs (extraction/sizes.py)
        settings_used["sizes"] = run_sizes(list(schemas.values()), request.model_dir)
        runs = []
        for decoder in decoders:
            run = Run.objects.create(
                name=request.name,
                decoder=decoder,
                catalog=request.catalog,
                category=request.category,
                search=request.search.strip(),
                model_dir=model_dir,
                model_version=version,
                decode_settings={**settings_used, "decoder": decoder},
                created_by=user,
            )
            run.schema_versions.set(schemas.values())
            run.total = _queue_work_items(run, products, schemas)
            run.save(update_fields=["total"])
            runs.append(run)
        if len(runs) == 2:
            runs[0].linked_run = runs[1]
            runs[0].save(update_fields=["linked_run"])
            runs[1].linked_run = runs[0]
            runs[1].save(update_fields=["linked_run"])
        for run in runs:
            transaction.on_commit(lambda run_id=run.id, total=run.total: kick_run(run_id, total))
    return runs


def send_run_wakeup(run_id: int) -> None:
    """One wake-up message of the run, through the workers app's answer to `run_wakeup`."""
    if not run_wakeup.has_listeners(Run):
        raise ImproperlyConfigured("No receiver wakes runs: the workers app is not installed or not ready.")
    run_wakeup.send(sender=Run, run_id=run_id)


def kick_run(run_id: int, total: int | None = None, send: Callable[[int], None] = send_run_wakeup) -> bool:
    """Send wake-up messages for a run: one per worker that could usefully join it.

    A broker that is down is logged, not raised: the run waits in PostgreSQL and the reaper (beat's
    wake_waiting_runs, idle workers) kicks it again later. `send` sends one message: the signal
    from the web side and the reaper, the GPU task itself from the worker loop (workers.tasks).
    """
    run = Run.objects.filter(pk=run_id).only("total", "decode_settings").first()
    if run is None:
        return False
    batches = -(-(total or run.total) // max(1, run.decode_settings.get("batch_size") or 1))
    Run.objects.filter(pk=run_id).update(last_kick_at=timezone.now())
    try:
        for _ in range(max(1, min(settings.EXTRACTION_WAKEUPS, batches))):
            send(run_id)
    except (BrokerError, OSError) as exc:
        log.warning("could not wake workers for run %s (the reaper retries): %s", run_id, exc)
        return False
    return True


def stalled(run: Run, now=None) -> bool:
    """An active run with takeable work, nobody holding a live lease, and no recent wake-up."""
    now = now or timezone.now()
    if not run.is_active:
        return False
    quiet_for = timedelta(seconds=2 * settings.EXTRACTION_LEASE_SECONDS)
    if run.last_kick_at and now - run.last_kick_at < quiet_for:
        return False
    items = WorkItem.objects.filter(run=run)
    if items.filter(WorkItem.lease_live(now)).exists():
        return False
    return items.filter(WorkItem.takeable(now)).exists()


def kick_if_stalled(run: Run) -> bool:
    if stalled(run):
        log.info("run %s looks stalled: sending a wake-up", run.id)
        return kick_run(run.id)
    return False


def kick_stalled_runs() -> list[int]:
    """The reaper's wake-up: re-send the wake-up of every active run whose work waits with no live
    lease covering it (its messages were lost, or its worker died); returns the runs woken."""
    return [
        run.id
        for run in Run.objects.filter(status__in=Run.ACTIVE_STATUSES).order_by("id")
        if kick_if_stalled(run)
    ]


def do_cancel_run(run_id: int) -> Run | None:
    """Cancel queued work; a batch being decoded stops at its next forward step (its worker asks
    about once a second, runner/loop.py run_stopped) and its products are cancelled too,
    so the worker takes the next run within seconds. A batch already being written is recorded."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or not run.is_active:
            return run
        WorkItem.objects.filter(run=run, status=WorkItem.Status.QUEUED).update(
            status=WorkItem.Status.CANCELLED, finished_at=timezone.now()
        )
        run.status = Run.Status.CANCELLED
        if not WorkItem.objects.filter(run=run, status=WorkItem.Status.LEASED).exists():
            run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
    return run
