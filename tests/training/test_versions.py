"""Model versions without a shared disk: archives fingerprinted by their bytes, unpacked into a
worker's cache whole or not at all; the run form offers them with their F1 on blind gold; the
catalog's default and its undo; the pages are for admins."""

import io
import tarfile

import pytest
from django.urls import reverse

from extraction.services import RunRefused, RunRequest, do_start_run
from registry import cache
from registry.archive import ArchiveError, pack, sha256_hex
from registry.models import ModelVersion
from registry.versions import DecisionRefused, default_version, do_discard, do_promote, do_undo_promotion
from tests.support.training import reviewed_catalog

pytestmark = pytest.mark.django_db


def stored_version(catalog, tmp_path, name="v1", payload=b"weights") -> ModelVersion:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "adapter_model.safetensors").write_bytes(payload)
    (folder / "slotwise.json").write_text("{}")
    data = pack(folder)
    return ModelVersion.objects.create(
        kind=ModelVersion.Kind.TRAINED, name=name, catalog=catalog, archive=data, sha256=sha256_hex(data),
        size_bytes=len(data),
    )  # fmt: skip


def test_it_packs_the_same_files_into_the_same_bytes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.json").write_text("1")
    first = pack(tmp_path / "a")
    (tmp_path / "a" / "x.json").write_text("1")  # rewritten: another mtime, the same content
    assert pack(tmp_path / "a") == first


def test_a_worker_unpacks_a_version_once_into_its_cache_by_fingerprint(settings, tmp_path):
    settings.MODEL_CACHE_DIR = str(tmp_path / "cache")
    version = stored_version(reviewed_catalog(), tmp_path)
    local = cache.local_dir(version.pk)
    assert local.name == version.sha256 and (local / "adapter_model.safetensors").read_bytes() == b"weights"
    ModelVersion.objects.filter(pk=version.pk).update(archive=b"")  # a second call reads no bytes
    assert cache.local_dir(version.pk) == local
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [version.sha256]


def test_bytes_that_do_not_match_their_fingerprint_leave_no_cache_entry(settings, tmp_path):
    settings.MODEL_CACHE_DIR = str(tmp_path / "cache")
    version = stored_version(reviewed_catalog(), tmp_path)
    ModelVersion.objects.filter(pk=version.pk).update(archive=bytes(version.archive)[:-10])
    with pytest.raises(ArchiveError, match="not the recorded"):
        cache.local_dir(version.pk)
    assert list((tmp_path / "cache").iterdir()) == []


def test_an_archive_member_that_is_not_a_plain_file_name_is_refused(settings, tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "into").mkdir()
    from registry.archive import unpack

    with pytest.raises(ArchiveError, match="not a plain file name"):
        unpack(buffer.getvalue(), sha256_hex(buffer.getvalue()), tmp_path / "into")
    assert not (tmp_path / "escape").exists()


def test_promotion_sets_the_catalog_default_runs_use_and_undo_puts_the_old_one_back(tmp_path, alice):
    catalog = reviewed_catalog()
    first, second = stored_version(catalog, tmp_path, "v1"), stored_version(catalog, tmp_path, "v2", b"other")
    do_promote(first, user=alice)
    do_promote(second, user=alice)
    assert default_version(catalog) == second
    assert do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0].model_version == second
    with pytest.raises(DecisionRefused, match="undo its promotion first"):
        do_discard(second)
    do_undo_promotion(catalog, user=alice)
    assert default_version(catalog) == first
    do_discard(second)
    with pytest.raises(RunRefused, match="not offered"):
        do_start_run(RunRequest(decoder="hpd", catalog=catalog, model_dir=f"version:{second.pk}"))
    do_undo_promotion(catalog, user=alice)
    assert default_version(catalog).is_shipped
    with pytest.raises(DecisionRefused, match="no promotion to undo"):
        do_undo_promotion(catalog)


def test_the_run_form_offers_each_version_with_its_f1_on_blind_gold(client_for, alice, carol, tmp_path):
    catalog = reviewed_catalog()
    version = stored_version(catalog, tmp_path, "house style")
    page = client_for(alice).get(reverse("extraction:start")).content.decode()
    assert f'<option value="version:{version.pk}">Reviewed shop: house style</option>' in page
    # beside the menu, the versions' F1 on blind gold, loaded from review's fragment
    scores_url = reverse("review:version_scores")
    assert f'hx-get="{scores_url}" hx-trigger="load"' in page
    scores = client_for(alice).get(scores_url).content.decode()
    assert "<td>Shipped default</td>" in scores and "<td>Reviewed shop: house style</td>" in scores
    assert scores.count("no F1 on blind gold yet") == 2
    assert client_for(carol).get(scores_url).status_code == 403  # raters see no review page
    # a job names its version after the catalog: the label does not say the catalog twice
    named = stored_version(catalog, tmp_path, "Reviewed shop · job 7", b"job")
    assert named.label == "Reviewed shop · job 7" and version.label == "Reviewed shop: house style"


def test_the_improve_page_shows_reviewed_gold_by_provenance_to_admins_only(client_for, alice, bob):
    catalog = reviewed_catalog()
    url = reverse("training:improve", args=[catalog.pk])
    assert client_for(bob).get(url).status_code == 403
    page = client_for(alice).get(url).content.decode()
    assert '<dd id="gold-products">6</dd>' in page and '<dd id="gold-blind">4</dd>' in page
    assert '<dd id="gold-corrected">4</dd>' in page and '<dd id="gold-accepted">4</dd>' in page
    assert "css/review" in page  # the charts' styles (the learning curve's bars take their colours there)


def test_a_start_without_enough_reviewed_products_is_refused_and_stores_nothing(client_for, alice):
    from catalog.models import Catalog
    from training.models import TrainingJob

    catalog = Catalog.objects.create(name="Empty")
    response = client_for(alice).post(
        reverse("training:start", args=[catalog.pk]), {"minutes": 1, "holdout_percent": 20, "seed": 0}
    )
    assert response.status_code == 400 and "review at least 2" in response.content.decode()
    assert not TrainingJob.objects.exists()


def test_the_pages_never_read_a_version_s_bytes(client_for, alice, tmp_path):
    """A version's archive is tens of megabytes: pages name versions, they never load them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    catalog = reviewed_catalog()
    version = stored_version(catalog, tmp_path)
    do_promote(version, user=alice)
    client = client_for(alice)
    with CaptureQueriesContext(connection) as queries:
        for url in (reverse("training:catalogs"), reverse("training:improve", args=[catalog.pk]),
                    reverse("extraction:start")):  # fmt: skip
            assert client.get(url).status_code == 200
    assert not [q["sql"] for q in queries if '"archive"' in q["sql"]]


def test_a_gpu_worker_hands_the_engine_its_cached_copy_of_a_run_s_version(settings, tmp_path):
    from runner.decoding import engine_model_dir

    settings.MODEL_CACHE_DIR = str(tmp_path / "cache")
    version = stored_version(reviewed_catalog(), tmp_path)
    run = do_start_run(RunRequest(decoder="hpd", model_dir=f"version:{version.pk}"))[0]
    assert run.model_version == version
    assert engine_model_dir(run.model_dir) == str(tmp_path / "cache" / version.sha256)
