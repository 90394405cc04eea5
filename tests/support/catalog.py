"""Helpers for the catalog tests: categories with schemas, uploads through the real views."""

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from catalog.imports.run import run_import
from catalog.models import Category, ImportJob
from catalog.schemas import AttributeData, do_import_schema


def make_category(name: str, *attributes: AttributeData) -> Category:
    """The category with exactly these attributes and sizes (not grown to what data needs: tests of
    cut values and of the size warnings need a small slot)."""
    attrs = list(attributes) or [AttributeData("Brand", "The brand.")]
    version, _ = do_import_schema(
        {"category": name, "attributes": [a.__dict__ for a in attrs]}, user=None, fit=False
    )
    return version.category


def upload(client, content: bytes | str, name: str = "products.csv", catalog: str = "Shop"):
    data = content.encode("utf-8") if isinstance(content, str) else content
    return client.post(
        reverse("catalog:upload"),
        {"new_catalog": catalog, "file": SimpleUploadedFile(name, data, content_type="text/csv")},
    )


def latest_job() -> ImportJob:
    return ImportJob.objects.order_by("-pk").first()


def map_columns(client, job: ImportJob, **choices):
    """Post the mapping form with the view's own guesses, overridden by `choices`."""
    form = client.get(reverse("catalog:import_map", args=[job.pk])).context["form"]
    data = {name: form[name].value() or "" for name in form.fields}
    data = {k: ("" if v is None else v) for k, v in data.items()}
    data.update({k: str(v) for k, v in choices.items()})
    return client.post(reverse("catalog:import_map", args=[job.pk]), data)


def import_inline(client, content: bytes | str, **upload_kwargs) -> ImportJob:
    """Upload, accept the guessed mapping, confirm, and run the import in this process."""
    response = upload(client, content, **upload_kwargs)
    assert response.status_code == 302, response.content.decode()[:2000]
    job = latest_job()
    response = map_columns(client, job)
    assert response.status_code == 302, response.content.decode()[:2000]
    client.post(reverse("catalog:import_start", args=[job.pk]))
    return run_import(job.pk)
