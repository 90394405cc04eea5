"""The background import on a real Celery worker (light queue): live progress, an import that
fails midway (its database connection is killed) leaves the database as it was, and the worker reads
the upload from PostgreSQL (it has a MEDIA_ROOT of its own: no disk in common with the web side).

To catch the import in the middle, the test holds a row lock on a product whose SKU sits in the
second batch of the file: the worker's upsert waits there, after reporting the first batch.
"""

from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import connection
from django.urls import reverse

from catalog.imports.write import BATCH_ROWS
from catalog.models import Catalog, ImportJob, ImportRowError, Product
from filestore.models import CHUNK_BYTES, StoredFile
from tests.support.catalog import latest_job, make_category, map_columns, upload
from tests.support.workers import start_worker, stop_worker, wait_until

ROWS = 2 * BATCH_ROWS + 500
LOCKED_SKU = f"S{BATCH_ROWS + 100:05d}"  # in the second batch


@pytest.fixture(scope="module")
def light_worker(django_db_setup):
    worker = start_worker(queues="light", name="catalog-import")
    yield worker
    stop_worker(worker)


@pytest.fixture
def locked_product(alice):
    """A product of catalog 'Shop' held under a row lock by another session until released."""
    tv = make_category("TV")
    shop = Catalog.objects.create(name="Shop")
    product = Product.objects.create(catalog=shop, sku=LOCKED_SKU, title="Before the import", category=tv)
    params = {
        k: v
        for k, v in connection.get_connection_params().items()
        if k in {"dbname", "user", "password", "host", "port"}
    }
    locker = psycopg.connect(**params)
    locker.execute("SELECT id FROM catalog_product WHERE id = %s FOR UPDATE", (product.pk,))
    yield product, locker
    locker.rollback()
    locker.close()


def start_import(client) -> ImportJob:
    rows = "".join(f"S{n:05d},Product {n},TV,\n" for n in range(ROWS))
    upload(client, "sku,title,category,note\n" + rows, catalog="Shop")
    job = latest_job()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]))
    return job


def blocked_import_pid(locker) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            [locker.info.backend_pid],
        )
        row = cursor.fetchone()
    return row[0] if row else 0


def job_now(job) -> ImportJob:
    return ImportJob.objects.get(pk=job.pk)


@pytest.mark.django_db(transaction=True)
def test_it_imports_in_the_background_with_live_progress(client_for, alice, light_worker, locked_product):
    product, locker = locked_product
    client = client_for(alice)
    job = start_import(client)
    wait_until(
        lambda: job_now(job).processed_rows == BATCH_ROWS and blocked_import_pid(locker),
        90,
        what="first batch",
    )
    partial = client.get(reverse("catalog:import_progress", args=[job.pk])).content.decode()
    assert f"<strong>{BATCH_ROWS:,}</strong> of {ROWS:,} rows (44%)" in partial
    assert 'hx-trigger="every 1s"' in partial  # the bar keeps polling while the import runs
    assert Product.objects.filter(catalog=product.catalog).count() == 1  # nothing visible before commit

    locker.rollback()  # let the import go on
    wait_until(lambda: job_now(job).is_finished, 90, what="import to finish")
    job = job_now(job)
    assert (job.status, job.created_count, job.updated_count, job.skipped_count) == ("done", ROWS - 1, 1, 0)
    assert Product.objects.filter(catalog=product.catalog).count() == ROWS
    partial = client.get(reverse("catalog:import_progress", args=[job.pk])).content.decode()
    assert "hx-trigger" not in partial  # finished: the bar stops polling
    assert f'id="count-created">{ROWS - 1:,}<' in partial


@pytest.mark.django_db(transaction=True)
def test_it_leaves_the_database_as_it_was_when_the_import_dies_midway(
    client_for, alice, light_worker, locked_product
):
    product, locker = locked_product
    client = client_for(alice)
    job = start_import(client)
    pid = wait_until(
        lambda: job_now(job).processed_rows == BATCH_ROWS and blocked_import_pid(locker),
        90,
        what="first batch",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])  # the database goes away under the import
    locker.rollback()
    wait_until(lambda: job_now(job).is_finished, 90, what="import to give up")
    job = job_now(job)
    assert job.status == ImportJob.Status.FAILED
    assert "The import stopped midway and nothing was stored" in job.message
    assert list(Product.objects.values_list("sku", "title")) == [(LOCKED_SKU, "Before the import")]
    assert ImportRowError.objects.count() == 0
    page = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert "The import failed; nothing of it was stored." in page


def files_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.is_file()]


@pytest.mark.django_db(transaction=True)
def test_it_imports_on_a_worker_that_shares_no_disk_with_the_web_side(client_for, alice, light_worker):
    make_category("TV")
    assert light_worker.media_root.resolve() != Path(settings.MEDIA_ROOT).resolve()
    rows = 30_000
    content = "sku,title,category\n" + "".join(
        f"F{n:06d},Product {n} whose title is long enough to fill a few chunks,TV\n" for n in range(rows)
    )
    assert len(content) > 2 * CHUNK_BYTES  # read back across chunk boundaries
    client = client_for(alice)
    upload(client, content, catalog="Far")
    job = latest_job()
    stored = StoredFile.objects.get(name=job.file.name)
    assert (
        stored.size == len(content.encode()) and stored.chunks.count() == -(-stored.size // CHUNK_BYTES) == 3
    )
    assert job.file.name not in {
        str(p.relative_to(settings.MEDIA_ROOT)) for p in files_under(Path(settings.MEDIA_ROOT))
    }
    map_columns(client, job)
    preview = client.get(reverse("catalog:import_preview", args=[job.pk])).content.decode()
    assert "F000019" in preview  # the web side reads the preview from PostgreSQL
    client.post(reverse("catalog:import_start", args=[job.pk]))

    wait_until(lambda: job_now(job).is_finished, 120, what="import on the worker")
    job = job_now(job)
    assert (job.status, job.created_count, job.skipped_count) == ("done", rows, 0), job.message
    assert Product.objects.get(catalog__name="Far", sku=f"F{rows - 1:06d}").title.startswith(
        f"Product {rows - 1} "
    )
    assert not default_storage.exists(job.file.name)  # imported: the stored upload is removed
    assert files_under(light_worker.media_root) == []  # nothing reached the worker's own disk
