"""Catalog tasks for the `light` queue: they take ids and leave the work to the importer."""

from celery import shared_task

from catalog.importer import run_import


@shared_task(name="catalog.tasks.import_catalog_file")
def import_catalog_file(job_id: int) -> None:
    run_import(job_id)
