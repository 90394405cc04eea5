"""Run screens over HTTP: who may use them, starting, progress, cancelling, HPD/AR comparison."""

import json
from dataclasses import dataclass

import pytest
from django.urls import reverse

from catalog.models import Category
from extraction.models import Run, WorkItem
from extraction.services import RunRequest, do_start_run
from runner.leases import ItemOutcome, lease_batch, record_results
from tests.support.runs_catalog import make_catalog
from workers import tasks


@dataclass
class Value:
    text: str
    confidence: float = 0.8
    steps: int = 2
    truncated: bool = False


@pytest.fixture
def catalog(db):
    return make_catalog(shoes=6, coffee=4)


def finish(run: Run, text_for=lambda item, name: "Acme") -> None:
    while items := lease_batch(run.id, "test-worker", 50):
        record_results(
            run.id,
            "test-worker",
            [
                ItemOutcome(i.id, {a.name: Value(text_for(i, a.name)) for a in i.schema.attributes.all()})
                for i in items
            ],
        )


def test_it_sends_anonymous_users_to_login(client, catalog):
    for name in ("extraction:runs", "extraction:start"):
        response = client.get(reverse(name))
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_it_lets_reviewers_watch_runs_but_not_start_or_cancel_them(client_for, bob, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    client = client_for(bob)
    assert client.get(reverse("extraction:runs")).status_code == 200
    assert client.get(reverse("extraction:detail", args=[run.id])).status_code == 200
    assert client.get(reverse("extraction:start")).status_code == 403
    assert client.post(reverse("extraction:start"), {"decoder": "hpd"}).status_code == 403
    assert client.post(reverse("extraction:cancel", args=[run.id])).status_code == 403
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED


def test_it_keeps_raters_out(client_for, carol, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    client = client_for(carol)
    for url in (
        reverse("extraction:runs"),
        reverse("extraction:detail", args=[run.id]),
        reverse("extraction:progress", args=[run.id]),
    ):
        assert client.get(url).status_code == 403


def test_it_starts_a_run_from_the_form(client_for, alice, catalog):
    shoes = Category.objects.get(name="Shoes")
    response = client_for(alice).post(
        reverse("extraction:start"),
        {"catalog": catalog.id, "category": shoes.id, "decoder": "hpd", "batch_size": 4, "model_dir": ""},
    )
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("extraction:detail", args=[run.id])
    assert (run.decoder, run.total, run.created_by, run.decode_settings["batch_size"]) == ("hpd", 6, alice, 4)
    assert WorkItem.objects.filter(run=run).count() == 6


def test_it_explains_a_refused_selection_and_stores_nothing(client_for, alice, catalog):
    response = client_for(alice).post(
        reverse("extraction:start"), {"catalog": catalog.id, "search": "zzz nothing", "decoder": "hpd"}
    )
    assert response.status_code == 400
    assert "No product matches this selection" in response.content.decode()
    response = client_for(alice).post(reverse("extraction:start"), {"decoder": "ar", "stack": 4})
    assert "Stacking applies to HPD only" in response.content.decode()
    assert not Run.objects.exists()


def test_it_counts_the_selection_while_the_form_is_filled(client_for, alice, catalog):
    coffee = Category.objects.get(name="Coffee")
    response = client_for(alice).get(reverse("extraction:selection_count"), {"category": coffee.id})
    assert response.content.decode() == "4 products selected"


def test_it_polls_progress_until_the_run_is_done(client_for, alice, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    client = client_for(alice)
    response = client.get(reverse("extraction:progress", args=[run.id]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert 'hx-trigger="every 1s"' in body and "0 / 10" in body
    assert "HX-Trigger" not in response
    finish(run)
    response = client.get(reverse("extraction:progress", args=[run.id]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "10 / 10" in body and "every 1s" not in body
    assert response["HX-Trigger"] == "run-finished"
    page = client.get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert page.count("<b>Brand</b> Acme") == 10


def test_it_shows_the_error_of_a_failed_product(client_for, alice, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog, search="Clarks"))[0]
    (item,) = lease_batch(run.id, "w", 5)
    record_results(run.id, "w", [ItemOutcome(item.id, error="DocumentTooLong: product SH-0003 needs 9000")])
    page = client_for(alice).get(reverse("extraction:detail", args=[run.id]), {"status": "failed"})
    assert "DocumentTooLong: product SH-0003 needs 9000" in page.content.decode()


def test_it_cancels_a_run(client_for, alice, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    response = client_for(alice).post(reverse("extraction:cancel", args=[run.id]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert WorkItem.objects.filter(run=run, status="cancelled").count() == 10
    assert client_for(alice).get(reverse("extraction:cancel", args=[run.id])).status_code == 405


def test_it_compares_linked_hpd_and_ar_runs_per_attribute(client_for, alice, catalog):
    hpd, ar = do_start_run(RunRequest(decoder="both", catalog=catalog))
    finish(hpd)
    # AR reads a different colour for the first two shoes only.
    first_two = set(
        WorkItem.objects.filter(run=ar, product__sku__in=["SH-0000", "SH-0001"]).values_list("id", flat=True)
    )
    finish(ar, lambda item, name: "Other" if name == "Color" and item.id in first_two else "Acme")
    page = client_for(alice).get(reverse("extraction:detail", args=[ar.id])).content.decode()
    assert "HPD vs AR agreement" in page
    assert "<td>Color</td><td>6</td><td>4</td>" in page
    assert "<td>Brand</td><td>10</td><td>10</td>" in page
    assert "Disagreements (2)" in page and "SH-0001" in page


def test_watching_a_run_sends_nothing_the_reaper_wakes_it(client_for, alice, catalog):
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    assert run.last_kick_at is None  # its wake-up was never sent (say, Redis was down)
    response = client_for(alice).get(reverse("extraction:progress", args=[run.id]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.last_kick_at is None  # a GET has no side effect
    assert tasks.wake_waiting_runs() == [run.id]
    run.refresh_from_db()
    assert run.last_kick_at is not None


def test_the_run_page_reloads_its_model_and_totals_when_the_run_finishes(client_for, alice, catalog):
    """QA: the model and forward steps stayed at "(loads when a worker starts)" / 0 until a manual reload."""
    run = do_start_run(RunRequest(decoder="hpd", catalog=catalog))[0]
    client = client_for(alice)
    page = client.get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert 'id="run-summary"' in page and 'hx-trigger="run-finished from:body"' in page
    assert "(loads when a worker starts)" in page
    finish(run)
    Run.objects.filter(pk=run.pk).update(model_name="tiny-llama", model_revision="r1", forward_steps=42)
    response = client.get(
        reverse("extraction:detail", args=[run.id]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-summary"
    )
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="run-summary"')
    assert "tiny-llama" in body and ">42 (" in body
    assert "<html" not in body and "Products</h2>" not in body  # the partial only, not the page


def test_the_start_form_says_when_the_bundled_model_is_missing(
    client_for, alice, catalog, settings, tmp_path
):
    """QA: the model menu showed a server path and never said that without weights the values are noise;
    issue 32: without a model a run of the default model fails (no random stand-in), and the form says so."""
    settings.SLOTWISE_MODEL_DIR = str(tmp_path / "slotwise-gemma3")
    page = client_for(alice).get(reverse("extraction:start")).content.decode()
    assert "Default model: not installed (run `make model`)" in page
    assert f"No model is installed in {tmp_path / 'slotwise-gemma3'}: run `make model` there" in page
    assert "never decode with random weights" in page
    assert "Catalog:" not in page  # labels without a colon, like every other form
    (tmp_path / "slotwise-gemma3").mkdir()
    (tmp_path / "slotwise-gemma3" / "config.json").write_text("{}")
    page = client_for(alice).get(reverse("extraction:start")).content.decode()
    assert "Default model: slotwise-gemma3" in page and "No model is installed" not in page


def test_the_start_form_offers_the_fast_model_with_the_label_its_settings_give(
    client_for, alice, catalog, settings, tmp_path
):
    fast = tmp_path / "fast"
    fast.mkdir()
    settings.FAST_MODEL_DIR = str(fast)
    page = client_for(alice).get(reverse("extraction:start")).content.decode()
    assert str(fast) not in page  # no weights there: not offered
    (fast / "config.json").write_text("{}")
    (fast / "slotwise.json").write_text(json.dumps({"label": "Fast: tiny model (HPD F1 0.60)"}))
    page = client_for(alice).get(reverse("extraction:start")).content.decode()
    assert f'value="{fast}"' in page and "Fast: tiny model (HPD F1 0.60)" in page


def test_the_comparison_keeps_refreshing_while_the_linked_run_works(client_for, alice, catalog):
    """QA: "Both" lands on the HPD run, which ends first; its comparison stayed empty until a manual reload."""
    hpd, ar = do_start_run(RunRequest(decoder="both", catalog=catalog))
    finish(hpd)
    client = client_for(alice)
    summary = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-summary"}
    body = client.get(reverse("extraction:detail", args=[hpd.id]), **summary).content.decode()
    assert 'hx-trigger="run-finished from:body, every 5s"' in body
    finish(ar)
    body = client.get(reverse("extraction:detail", args=[hpd.id]), **summary).content.decode()
    assert "every 5s" not in body and "<td>Brand</td><td>10</td><td>10</td>" in body


def test_the_start_message_counts_products_and_runs_in_plain_words(client_for, alice, catalog):
    """QA: "Queued 1 products in 2 run(s)." after starting both decoders on one product."""
    client = client_for(alice)
    response = client.post(
        reverse("extraction:start"), {"search": "SH-0003", "decoder": "both", "model_dir": ""}, follow=True
    )
    body = response.content.decode()
    assert "Queued 1 product in two linked runs, HPD and AR" in body and "run(s)" not in body
    response = client.post(
        reverse("extraction:start"), {"catalog": catalog.id, "decoder": "hpd"}, follow=True
    )
    assert "Queued 10 products." in response.content.decode()


def test_a_both_run_says_that_ar_waits_for_hpd_until_it_starts(client_for, alice, catalog):
    """QA: "Both" ran HPD 292 s and then AR 1,417 s with no word that the second waited."""
    hpd, ar = do_start_run(RunRequest(decoder="both", catalog=catalog))
    client = client_for(alice)
    body = client.get(reverse("extraction:progress", args=[ar.id])).content.decode()
    assert "this AR run starts when its linked HPD run" in body
    assert (
        "run-waits-for-linked"
        not in client.get(reverse("extraction:progress", args=[hpd.id])).content.decode()
    )
    finish(hpd)
    assert (
        "run-waits-for-linked"
        not in client.get(reverse("extraction:progress", args=[ar.id])).content.decode()
    )
