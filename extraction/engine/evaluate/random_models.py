"""Randomly initialised models of a published model's shape, for speed only: what HPD against AR
costs at that size on a given device, without its weights (none can be downloaded here). The
tokenizer is the default model's, so prompts and values keep their real lengths; the outputs are
noise, and evaluate's quality figures for such a model mean nothing."""

from __future__ import annotations

import pathlib

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

# the architecture of each published config (its config.json), vocabulary aside
SHAPES = {
    "qwen3-1.7b": {
        "model_type": "qwen3",
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rope_theta": 1_000_000.0,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": True,
    },
    "smollm2-135m": {
        "model_type": "llama",
        "hidden_size": 576,
        "intermediate_size": 1536,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "max_position_embeddings": 8192,
        "rope_theta": 100_000.0,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True,
    },
}


def write_random_model(
    shape: str, tokenizer_dir: pathlib.Path, out: pathlib.Path, seed: int = 0, **overrides
) -> pathlib.Path:
    """A model directory (config, random weights in bfloat16, tokenizer) of SHAPES[shape] -> out
    (overrides: config fields to change, e.g. fewer layers in a test). A slotwise.json marks it as
    speed-only and keeps extractive decoding on, as the default model decodes (the constraint's
    cost is part of the speed)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}: expected one of {', '.join(SHAPES)}")
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    size = dict(SHAPES[shape], **overrides)
    config = AutoConfig.for_model(
        size.pop("model_type"),
        vocab_size=len(tok),
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        **size,
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    (out / "slotwise.json").write_text(
        f'{{"extractive": true, "random_shape": "{shape}", "speed_only": true}}\n'
    )
    return out
