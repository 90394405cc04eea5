"""Uploads and exports stored under MEDIA_ROOT before files moved to PostgreSQL are copied in, chunk
by chunk, so an import waiting at mapping or an export's download still works after the upgrade.
The files on disk are left where they are (remove MEDIA_ROOT/imports and /review-exports by hand)."""

from pathlib import Path

from django.conf import settings
from django.db import migrations

CHUNK_BYTES = 1024 * 1024  # filestore.models.CHUNK_BYTES when this was written


def copy_files_in(apps, schema_editor):
    StoredFile = apps.get_model("filestore", "StoredFile")
    StoredChunk = apps.get_model("filestore", "StoredChunk")
    names = set()
    for app, model in (("catalog", "ImportJob"), ("review", "ExportJob")):
        names.update(apps.get_model(app, model).objects.exclude(file="").values_list("file", flat=True))
    for name in sorted(names):
        path = Path(settings.MEDIA_ROOT) / name
        if not path.is_file() or StoredFile.objects.filter(name=name).exists():
            continue
        stored = StoredFile.objects.create(name=name, size=path.stat().st_size)
        with path.open("rb") as f:
            for index, data in enumerate(iter(lambda: f.read(CHUNK_BYTES), b"")):  # noqa: B023
                StoredChunk.objects.create(file=stored, index=index, data=data)


class Migration(migrations.Migration):
    dependencies = [
        ("filestore", "0001_initial"),
        # the first migrations with the file fields, and no later: the migration tests move catalog
        # and review back to older states, which this one must not hold them above
        ("catalog", "0002_import_jobs"),
        ("review", "0001_initial"),
    ]

    operations = [migrations.RunPython(copy_files_in, migrations.RunPython.noop)]
