"""Models the engine cannot serve exactly are refused with a clear message."""

from __future__ import annotations

import pytest
from transformers import AutoConfig

from extraction.engine.modeling import UnsupportedModel, check_servable


def config(model_type: str, **kw):
    return AutoConfig.for_model(
        model_type, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, **kw
    )


def test_it_refuses_an_active_sliding_window():
    with pytest.raises(UnsupportedModel, match="sliding window"):
        check_servable(config("mistral", sliding_window=16), span=200)


def test_it_serves_a_window_wider_than_every_position():
    check_servable(config("mistral", sliding_window=4096), span=200)


def test_it_serves_gemma3_sliding_layers_past_their_window():
    """Gemma 3's forward takes one mask per layer type: the engine cuts its sliding layers' masks
    to the window (test_sliding_window.py), so a span past it is served."""
    cfg = config(
        "gemma3_text", sliding_window=16, layer_types=["sliding_attention", "full_attention"], head_dim=16
    )
    check_servable(cfg, span=500)


def test_it_refuses_qwen2_with_sliding_layers():
    cfg = config("qwen2", use_sliding_window=True, sliding_window=32, max_window_layers=0)
    with pytest.raises(UnsupportedModel, match="sliding"):
        check_servable(cfg, span=500)


def test_it_serves_plain_full_attention_models():
    for t in ("llama", "qwen2", "qwen3", "phi3", "gpt_neox"):
        check_servable(config(t), span=10_000)


def test_it_refuses_recurrent_layers_and_softcapping_and_encoder_decoder():
    with pytest.raises(UnsupportedModel, match="layer types"):
        check_servable(config("llama", layer_types=["full_attention", "linear_attention"]), span=10)
    with pytest.raises(UnsupportedModel, match="softcapping"):
        check_servable(config("gemma2", sliding_window=4096), span=10)
    with pytest.raises(UnsupportedModel, match="encoder-decoder"):
        check_servable(AutoConfig.for_model("t5"), span=10)


def test_extractor_refuses_a_sliding_model_at_extract(tmp_path, tokenizer):
    from extraction.engine.api import AttributeSpec, Document, Extractor
    from extraction.engine.modeling import random_model

    model = random_model(
        "mistral",
        tokenizer,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        sliding_window=8,
    )
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    ex = Extractor(tmp_path)
    with pytest.raises(UnsupportedModel, match="sliding window"):
        ex.extract([Document("a", "Diesel sneaker")], [AttributeSpec("Brand")])
