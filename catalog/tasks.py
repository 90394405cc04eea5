"""Catalog tasks for the `light` queue: they take ids and leave the work to catalog.imports.run."""

from celery import shared_task

from catalog.imports.run import run_import


@shared_task(name="catalog.tasks.import_catalog_file")
def import_catalog_file(job_id: int) -> None:
    run_import(job_id)
