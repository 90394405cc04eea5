"""Each refusal of the import is its own exception: an unreadable file, one over a limit, a bad
mapping, a job in the wrong state. The pages' messages and statuses are in test_bad_input.py,
test_import_files.py and test_import_rows.py; here, which exception each step raises."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from catalog.imports.errors import BadFile, BadMapping, FileOverLimit, WrongImportState
from catalog.imports.map import Mapping, do_save_mapping
from catalog.imports.read import check_size
from catalog.imports.start import do_start_import
from catalog.imports.upload import do_create_import
from catalog.models import ImportJob
from tests.support.catalog import make_category


def test_it_refuses_an_empty_file_as_unreadable_and_a_large_one_as_over_the_limit():
    with pytest.raises(BadFile, match=r"^The file is empty\.$"):
        check_size(0, 100)
    with pytest.raises(FileOverLimit) as over:
        check_size(101, 100)
    assert not isinstance(over.value, BadFile)
    assert str(over.value).startswith(
        "The file is 0.0 MB (101 bytes): 1 byte over the limit of 0.0 MB (100 bytes)."
    )


def test_it_refuses_a_mapping_without_its_required_columns_as_a_bad_mapping(alice):
    job = do_create_import(SimpleUploadedFile("p.csv", b"sku,title\nA1,Acme TV\n"), None, "Shop", alice)
    with pytest.raises(BadMapping) as refused:
        do_save_mapping(job, Mapping(sku=0, title=0))
    assert str(refused.value) == (
        "Missing required column: choose the category column, or one category for all rows. "
        "One column is mapped to two product fields."
    )
    job.refresh_from_db()
    assert (job.status, job.mapping) == (ImportJob.Status.UPLOADED, {})


def test_it_refuses_to_remap_or_restart_a_started_import_as_a_wrong_state(alice):
    tv = make_category("TV")
    job = do_create_import(SimpleUploadedFile("p.csv", b"sku,title\nA1,Acme TV\n"), None, "Shop", alice)
    with pytest.raises(WrongImportState, match=r"^This import has been started already\.$"):
        do_start_import(job)  # not mapped yet
    mapping = Mapping(sku=0, title=1, fixed_category_id=tv.pk)
    do_save_mapping(job, mapping)
    do_start_import(job)
    with pytest.raises(WrongImportState, match=r"^This import has been started already\.$"):
        do_start_import(job)
    with pytest.raises(
        WrongImportState, match=r"^This import has started already; its mapping can no longer"
    ):
        do_save_mapping(job, mapping)
    job.refresh_from_db()
    assert job.status == ImportJob.Status.QUEUED


def test_it_checks_a_small_upload_from_a_staging_file_it_removes_and_marks_nothing_on_it(alice):
    staging = Path(settings.MEDIA_ROOT) / "staging"
    staged_before = set(staging.glob("*"))
    upload = SimpleUploadedFile("p.csv", b"sku,title\nA1,Acme TV\n")
    attributes_before = set(vars(upload))
    job = do_create_import(upload, None, "Shop", alice)
    assert set(vars(upload)) == attributes_before
    assert set(staging.glob("*")) == staged_before
    assert job.open_file().read() == b"sku,title\nA1,Acme TV\n"  # stored in PostgreSQL
    job.file.delete(save=False)
