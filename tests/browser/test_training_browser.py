"""An admin improves a catalog's model in Chromium: reviewed gold by provenance, a training job on a
real `train` worker watched live (htmx), the held-back proof, promotion and its undo."""

import pytest
import redis
from django.conf import settings

from registry.models import ModelVersion
from registry.versions import default_version
from tests.support.browser import chromium_page, sign_in
from tests.support.training import TINY_JOB_ENV, reviewed_catalog
from tests.support.workers import start_worker, stop_worker
from training.models import TrainingJob

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def train_worker(tmp_path):
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    proc = start_worker(
        queues="train", name="browser-train", env=TINY_JOB_ENV, log_path=tmp_path / "worker.log"
    )
    yield proc
    stop_worker(proc, timeout=15)


def test_an_admin_trains_a_version_watches_it_proves_it_promotes_it_and_undoes_it(
    live_server, alice, password, train_worker, settings
):
    settings.TRAINING_MAX_STEPS = 2  # the real trainer, cut to two steps of short rows
    settings.TRAINING_BATCH_TOKENS = 128
    catalog = reviewed_catalog()
    with chromium_page() as page:
        sign_in(page, live_server.url, "alice", password)
        page.click("nav >> text=Models")
        page.click("#model-catalogs >> text=Improve the model")
        assert page.inner_text("#gold-products") == "6" and page.inner_text("#gold-blind") == "4"
        assert page.inner_text("#catalog-default") == "Shipped default"
        page.fill("#id_minutes", "3")
        page.fill("#id_holdout_percent", "34")
        page.click("#start-job")

        page.wait_for_selector("#job-progress")
        assert "queued on the train queue" in page.inner_text(".messages")
        assert "2 products" in page.inner_text("#job-held")
        # the progress block polls every second, then the page reloads itself with the proof
        page.wait_for_selector("#job-step:not(:has-text('0'))", timeout=600_000)
        page.wait_for_selector("#job-proof", timeout=600_000)
        assert page.inner_text("#job-status") == "Done"
        assert page.locator("#proof-attributes tbody tr").count() == 2
        assert page.inner_text("#f1-old") and page.inner_text("#f1-new")

        page.click("#promote")
        version = ModelVersion.objects.get(kind=ModelVersion.Kind.TRAINED)
        page.wait_for_selector(f"#catalog-default:has-text('{version.name}')")
        assert default_version(catalog) == version
        page.click("#undo-promotion")
        page.wait_for_selector("#catalog-default:has-text('Shipped default')")
    assert default_version(catalog).is_shipped
    assert TrainingJob.objects.get().status == TrainingJob.Status.DONE
