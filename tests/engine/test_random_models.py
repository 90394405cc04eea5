"""A random model of a published shape (speed only) loads and decodes through the engine like any
model directory; its config carries the shape asked for."""

from __future__ import annotations

import json

import pytest
from transformers import AutoConfig

from extraction.engine.api import Document, Extractor
from extraction.engine.evaluate.random_models import SHAPES, write_random_model
from extraction.engine.layout import AttributeSpec
from tests.support.tiny_models import TEXTS

SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4}


def test_a_random_qwen3_of_the_asked_shape_decodes(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path / "tok")
    out = write_random_model(
        "qwen3-1.7b", tmp_path / "tok", tmp_path / "model", num_key_value_heads=2, head_dim=16, **SMALL
    )
    config = AutoConfig.from_pretrained(out)
    assert config.model_type == "qwen3" and config.head_dim == 16 and config.num_key_value_heads == 2
    assert config.rope_parameters["rope_theta"] == SHAPES["qwen3-1.7b"]["rope_theta"]
    assert config.vocab_size == len(tokenizer)
    assert json.loads((out / "slotwise.json").read_text())["speed_only"] is True
    ex = Extractor(out)
    assert not ex.random_standin and ex.extractive  # a real directory, decoded as the default model is
    docs = [Document(str(i), t) for i, t in enumerate(TEXTS)]
    attrs = [AttributeSpec("Brand", max_tokens=4), AttributeSpec("Color", max_tokens=4)]
    hpd, _ = ex.extract(docs, attrs, decoder="hpd", stack=2, rows=2)
    ar, _ = ex.extract(docs, attrs, decoder="ar", batch=2)
    assert len(hpd) == len(ar) == len(docs)
    assert all(set(r) == {"Brand", "Color"} for r in hpd + ar)


def test_an_unknown_shape_is_refused(tokenizer, tmp_path):
    with pytest.raises(ValueError, match="unknown shape 'gpt-9'"):
        write_random_model("gpt-9", tmp_path, tmp_path / "m")
