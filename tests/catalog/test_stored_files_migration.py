"""Migration filestore 0002: an upload stored under MEDIA_ROOT before files moved to PostgreSQL is
copied in, so an import waiting at mapping still previews and imports after the upgrade."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from catalog.models import ImportJob
from tests.support.migrations import back_to_latest, migrate  # noqa: F401 - back_to_latest is a fixture

CONTENT = b"sku,title\n" + b"".join(b"S%06d,Product %d\n" % (n, n) for n in range(80_000))  # two chunks


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_an_upload_left_on_disk_is_copied_into_postgresql():
    apps = migrate(filestore="0001_initial")
    Catalog, Job = apps.get_model("catalog", "Catalog"), apps.get_model("catalog", "ImportJob")
    name = "imports/before-the-upgrade.csv"
    path = Path(settings.MEDIA_ROOT) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(CONTENT)
    try:
        job = Job.objects.create(catalog=Catalog.objects.create(name="Old"), file=name, original_name="p.csv")
        migrate()
        assert default_storage.size(name) == len(CONTENT)
        assert ImportJob.objects.get(pk=job.pk).open_file().read() == CONTENT
    finally:
        path.unlink()
        default_storage.delete(name)
