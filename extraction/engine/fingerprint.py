"""A model's identity: one hash of the files that decide its values and the precision it decodes in.

Two directories with the same fingerprint decode the same values; a run records the fingerprint of
the first copy that decodes it, and a worker whose copy differs does not decode it
(runner/identity.py). Torch-free, so a worker can hash before it loads anything.

What is hashed, per file (sorted by name, each as name + sha256 of its bytes): the weights, the model
config, the tokenizer, the chat template and slotwise.json (extractive decoding, boundary rules,
calibration). Not hashed: the model card (README.md), training logs (training*.json) and other
subfolders (dev splits), which change no value. A directory that `make model` assembled (it holds
base_model.STAMP) counts by what it was made from, the base's and the artifact's hashes, instead of
its merged weights: merging on two CPUs may round the last bit differently, and each GPU host
assembles its own copy. A LoRA artifact loaded as it is counts with its base's fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import pathlib

from extraction.engine.base_model import STAMP, adapter_base, is_adapter, sha256_of

VALUE_SUFFIXES = (".json", ".safetensors", ".bin", ".model", ".jinja", ".txt")
NOT_VALUES = ("README.md",)
MERGED_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
# The engine's random stand-in (no model assembled yet): random weights, values are noise anyway.
RANDOM_STANDIN = "random-standin"


def _decides_values(path: pathlib.Path) -> bool:
    return (
        path.is_file()
        and path.suffix in VALUE_SUFFIXES
        and path.name not in NOT_VALUES
        and not path.name.startswith("training")
    )


def files_fingerprint(model_dir: pathlib.Path) -> str:
    """sha256 over the value-deciding files of a model directory (see the module's docstring)."""
    h = hashlib.sha256()
    assembled = (model_dir / STAMP).is_file()
    for path in sorted(model_dir.iterdir()):
        if not _decides_values(path) or (assembled and path.name in MERGED_WEIGHTS):
            continue
        h.update(f"{path.name}\0{sha256_of(path)}\n".encode())
    if is_adapter(model_dir):
        base = adapter_base(model_dir)
        h.update(f"base\0{files_fingerprint(base) if base.is_dir() else 'missing'}\n".encode())
    return h.hexdigest()


def model_fingerprint(model_dir: pathlib.Path | None, dtype: str) -> str:
    """The identity of a loaded model: its files (None: the random stand-in) and its precision."""
    files = files_fingerprint(model_dir) if model_dir is not None else RANDOM_STANDIN
    return hashlib.sha256(json.dumps({"files": files, "dtype": dtype}).encode()).hexdigest()
