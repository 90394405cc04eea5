"""Stopping a decode between forward steps: the caller's should_stop is asked before every forward
of HPD and AR alike, raises Cancelled at once, and leaves the values alone while it says no."""

from __future__ import annotations

import pytest

from extraction.engine.api import AttributeSpec, Document, Extractor
from extraction.engine.decode.stopping import Cancelled, stop_between_forwards
from tests.support.tiny_models import TEXTS

DOCS = [Document(f"sku-{i}", text) for i, text in enumerate(TEXTS)]
SPECS = [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Color", "main colour", 3)]


@pytest.fixture(scope="module")
def extractor(model_dir):
    return Extractor(model_dir)


def texts(results):
    return [{k: (v.text, round(v.confidence, 6)) for k, v in r.items()} for r in results]


@pytest.mark.parametrize("decoder", ["hpd", "ar"])
def test_a_stop_never_asked_for_changes_no_value(extractor, decoder):
    extractor.extract(
        DOCS, SPECS, decoder=decoder
    )  # the first call also prefills the prefix, measures layouts
    plain, plain_stats = extractor.extract(DOCS, SPECS, decoder=decoder)
    asked = []
    with stop_between_forwards(extractor.model, lambda: asked.append(1) and False):
        hooked, hooked_stats = extractor.extract(DOCS, SPECS, decoder=decoder)
    assert texts(hooked) == texts(plain) and hooked_stats.forward_steps == plain_stats.forward_steps
    assert len(asked) >= plain_stats.forward_steps  # asked before every forward, the prefix's too


@pytest.mark.parametrize("decoder", ["hpd", "ar"])
def test_a_stop_asked_for_ends_the_decode_at_the_next_forward(extractor, decoder):
    asked = []

    def after_three() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(Cancelled), stop_between_forwards(extractor.model, after_three):
        extractor.extract(DOCS, SPECS, decoder=decoder)
    assert len(asked) == 4  # not one forward more
    # the hook is gone afterwards: the same extractor decodes as before
    again, _ = extractor.extract(DOCS, SPECS, decoder=decoder)
    assert len(again) == len(DOCS)
