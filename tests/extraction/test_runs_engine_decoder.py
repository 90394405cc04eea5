"""An AR run decodes with the engine's AR at its honest best (#49 point 3): the worker loop, in this
process, on real PostgreSQL and the small real model, hands the engine `ar-honest` for an AR run and
`hpd` for an HPD run, records which on the run, and the run page names it."""

import pytest
from django.conf import settings
from django.urls import reverse

from extraction.engine.api import Extractor
from extraction.models import ExtractedValue, Run
from extraction.services import RunRequest, do_start_run
from runner.loop import process_run
from tests.support.runs_catalog import make_catalog

# The loop's lease heartbeat renews leases from a thread of its own: committed data, so that thread
# sees the run's work items.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def engine_decoders(monkeypatch):
    """The decoder each call of the real engine was given (the engine still decodes)."""
    given: list[str] = []
    extract = Extractor.extract

    def recording(self, docs, attributes, decoder="hpd", **kwargs):
        given.append(decoder)
        return extract(self, docs, attributes, decoder=decoder, **kwargs)

    monkeypatch.setattr(Extractor, "extract", recording)
    return given


def test_the_product_maps_its_runs_to_the_engines_decoders():
    assert Run.ENGINE_DECODERS == {Run.Decoder.HPD: "hpd", Run.Decoder.AR: "ar-honest"}
    assert Run(decoder=Run.Decoder.AR).engine_decoder == "ar-honest"
    assert Run(decoder=Run.Decoder.HPD).engine_decoder == "hpd"  # negative control: HPD is HPD


@pytest.mark.parametrize(
    ("decoder", "engine_decoder"), [("ar", "ar-honest"), ("hpd", "hpd")], ids=["ar-run", "hpd-run"]
)
def test_a_runs_work_is_decoded_with_its_engine_decoder(
    engine_decoders, client_for, alice, decoder, engine_decoder
):
    catalog = make_catalog(shoes=2, coffee=1)
    run = do_start_run(RunRequest(decoder=decoder, catalog=catalog, model_dir=settings.FAST_MODEL_DIR))[0]
    assert process_run(run.id, "test-worker", lambda *args, **kwargs: True)
    run.refresh_from_db()
    assert run.status == Run.Status.DONE and (run.done, run.failed) == (3, 0), run.error
    assert ExtractedValue.objects.filter(run=run).count() == 3 * 2
    assert run.decoder == decoder  # the stored decoder is unchanged: no migration of runs
    assert engine_decoders and set(engine_decoders) == {engine_decoder}  # every batch (one a schema)
    assert run.decode_settings["engine_decoder"] == engine_decoder == run.engine_decoder_used
    page = client_for(alice).get(reverse("extraction:detail", args=[run.id])).content.decode()
    assert f'<span class="mono">{engine_decoder}</span>' in page
    honest = "AR-JSON at its honest best: prefix cache, output layer only on the rows its constraint allows"
    assert (honest in page) == (decoder == "ar")
