"""The engine tests' fixtures: a small tokenizer built in code (no downloads), a tiny random model
saved as a model directory, the real tokenizer where its files are, and the typed schema on the tiny
model. Their helpers live in tests/support (tiny_models, engine_schemas)."""

from __future__ import annotations

import pytest
import torch

from extraction.engine import modeling
from extraction.engine.api import Extractor
from tests.support.engine_schemas import REAL_TOKENIZER, TYPED
from tests.support.tiny_models import TEXTS, tiny_model

torch.set_num_threads(1)  # tiny models: threads only add contention on a shared 2-core machine


@pytest.fixture(scope="session")
def tokenizer():
    return modeling.build_tokenizer(TEXTS)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, tokenizer):
    """A tiny random Llama saved with its tokenizer, as a model directory."""
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_model("llama", tokenizer).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def real_tokenizer():
    if not (REAL_TOKENIZER / "tokenizer.json").is_file():
        pytest.skip("no real tokenizer files")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(REAL_TOKENIZER)


@pytest.fixture(scope="module")
def typed(model_dir):
    ex = Extractor(model_dir, extractive=True)
    return ex, ex.schema(TYPED)
