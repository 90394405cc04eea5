"""Removing a stalled import and an empty catalog from the UI: admins only, asked first, and nothing
else lost (products, finished imports, catalogs with products, imports a worker is writing)."""

import threading

import pytest
from django.core.files.storage import default_storage
from django.db import connection, transaction
from django.urls import reverse

from catalog.models import Catalog, ImportJob, Product
from catalog.upkeep import UpkeepRefused, do_remove_catalog, do_remove_import
from evaluation.models import System
from tests.support.catalog import import_inline, latest_job, make_category, map_columns, upload

CSV = "sku,title,category\nA1,Acme TV,TV\nA2,Globex TV,TV\n"


@pytest.fixture
def tv(db):
    return make_category("TV")


def stalled_import(client, catalog: str = "Shop") -> ImportJob:
    """An import confirmed while no worker serves the light queue: queued for good."""
    upload(client, CSV, catalog=catalog)
    job = latest_job()
    map_columns(client, job)
    client.post(reverse("catalog:import_start", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED
    return job


@pytest.mark.django_db
def test_an_admin_removes_a_stalled_import_and_the_catalogs_products_stay(
    client_for, alice, tv, django_capture_on_commit_callbacks
):
    client = client_for(alice)
    import_inline(client, CSV)  # two products already in the catalog
    job = stalled_import(client)
    stored = job.file.name
    assert default_storage.exists(stored)
    detail = client.get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    assert 'id="remove-import"' in detail and "data-ask=" in detail  # asked before it is sent

    with django_capture_on_commit_callbacks(execute=True):  # the file goes once the removal commits
        response = client.post(reverse("catalog:import_remove", args=[job.pk]), follow=True)
    assert "Removed the import of products.csv; the catalog&#x27;s products are as they were." in (
        response.content.decode()
    )
    assert not ImportJob.objects.filter(pk=job.pk).exists() and not default_storage.exists(stored)
    assert sorted(Product.objects.values_list("sku", flat=True)) == ["A1", "A2"]
    assert ImportJob.objects.filter(status=ImportJob.Status.DONE).count() == 1  # the finished one stays


@pytest.mark.django_db
def test_a_finished_import_is_never_removed(client_for, alice, tv):
    job = import_inline(client_for(alice), CSV)
    assert (
        'id="remove-import"'
        not in client_for(alice).get(reverse("catalog:import_detail", args=[job.pk])).content.decode()
    )
    response = client_for(alice).post(reverse("catalog:import_remove", args=[job.pk]), follow=True)
    assert "Cannot remove the import: products.csv was imported" in response.content.decode()
    assert ImportJob.objects.filter(pk=job.pk).exists() and Product.objects.count() == 2


@pytest.mark.django_db
def test_only_admins_remove_imports_and_catalogs(client_for, client, alice, bob, tv):
    job = stalled_import(client_for(alice))
    empty = Catalog.objects.create(name="Empty")
    for url in (
        reverse("catalog:import_remove", args=[job.pk]),
        reverse("catalog:catalog_remove", args=[empty.pk]),
    ):
        assert client_for(bob).post(url).status_code == 403
        client.logout()
        assert client.post(url).status_code == 302 and "/login/" in client.post(url)["Location"]
        assert client_for(alice).get(url).status_code == 405  # a GET removes nothing
    assert ImportJob.objects.filter(pk=job.pk).exists() and Catalog.objects.filter(pk=empty.pk).exists()


@pytest.mark.django_db
def test_an_empty_catalog_is_removed_with_its_unfinished_imports_and_one_with_products_is_refused(
    client_for, alice, tv, django_capture_on_commit_callbacks
):
    client = client_for(alice)
    import_inline(client, CSV, catalog="Full")
    job = stalled_import(client, catalog="Abandoned")
    abandoned = job.catalog
    page = client.get(reverse("catalog:imports")).content.decode()
    assert 'data-name="Abandoned"' in page and "Remove the empty catalog Abandoned?" in page
    assert "Remove the empty catalog Full?" not in page  # no button where products are

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("catalog:catalog_remove", args=[abandoned.pk]), follow=True)
    assert "Removed the empty catalog Abandoned." in response.content.decode()
    assert (
        not Catalog.objects.filter(pk=abandoned.pk).exists()
        and not ImportJob.objects.filter(pk=job.pk).exists()
    )
    assert not default_storage.exists(job.file.name)

    full = Catalog.objects.get(name="Full")
    response = client.post(reverse("catalog:catalog_remove", args=[full.pk]), follow=True)
    assert "Cannot remove the catalog: Full holds 2 products: only an empty catalog can be removed" in (
        response.content.decode()
    )
    assert Product.objects.filter(catalog=full).count() == 2


@pytest.mark.django_db
def test_a_catalog_an_ab_system_names_is_kept():
    catalog = Catalog.objects.create(name="Outside outputs")
    System.objects.create(name="Vendor X", kind=System.Kind.IMPORTED, catalog=catalog)
    with pytest.raises(UpkeepRefused, match="Outside outputs is used by Vendor X; nothing was removed"):
        do_remove_catalog(catalog.pk)
    assert Catalog.objects.filter(pk=catalog.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_an_import_a_worker_is_writing_is_not_removed(client_for, alice, tv):
    """A running import holds its catalog's row lock for its whole transaction: refused, not waited on."""
    job = stalled_import(client_for(alice))
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.RUNNING)
    locked, release = threading.Event(), threading.Event()

    def writing_import():
        with transaction.atomic():
            Catalog.objects.select_for_update().get(pk=job.catalog_id)
            locked.set()
            release.wait(30)
        connection.close()

    worker = threading.Thread(target=writing_import)
    worker.start()
    try:
        assert locked.wait(30)
        with pytest.raises(UpkeepRefused, match="an import is writing into this catalog right now"):
            do_remove_import(job.pk)
        with pytest.raises(UpkeepRefused, match="an import is writing into this catalog right now"):
            do_remove_catalog(job.catalog_id)
    finally:
        release.set()
        worker.join()
    assert ImportJob.objects.filter(pk=job.pk).exists()
    do_remove_import(job.pk)  # the worker gone (stalled): removed
    assert not ImportJob.objects.filter(pk=job.pk).exists()
