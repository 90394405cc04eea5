"""A model's fingerprint: the files that decide its values and its precision, nothing else."""

import json
import shutil
from pathlib import Path

from extraction.engine.base_model import STAMP
from extraction.engine.fingerprint import files_fingerprint, model_fingerprint

SMALL_MODEL = Path(__file__).resolve().parents[2] / "models" / "slotwise-ave"


def copy_of(target: Path) -> Path:
    target.mkdir()
    for path in SMALL_MODEL.iterdir():
        if path.is_file():
            shutil.copy2(path, target / path.name)
    return target


def test_it_changes_with_weights_settings_and_precision_only(tmp_path):
    model = copy_of(tmp_path / "m")
    before = files_fingerprint(model)
    assert files_fingerprint(copy_of(tmp_path / "copy")) == before  # the same files elsewhere
    (model / "README.md").write_text("a new model card")
    (model / "training.json").write_text("{}")
    assert files_fingerprint(model) == before  # cards and training logs decide no value
    stored = json.loads((model / "slotwise.json").read_text())
    stored["extractive"] = not stored["extractive"]
    (model / "slotwise.json").write_text(json.dumps(stored))
    edited = files_fingerprint(model)
    assert edited != before
    weights = model / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    assert files_fingerprint(model) not in {before, edited}
    assert model_fingerprint(model, "float32") != model_fingerprint(model, "bfloat16")


def test_an_assembled_model_counts_by_what_it_was_made_from(tmp_path):
    model = copy_of(tmp_path / "m")
    (model / STAMP).write_text('{"base": "01147f865a01", "artifact": "b21e9b08b952"}')
    before = files_fingerprint(model)
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")  # merged on another CPU: the last bits differ
    assert files_fingerprint(model) == before
    (model / STAMP).write_text('{"base": "01147f865a01", "artifact": "000000000000"}')
    assert files_fingerprint(model) != before  # another artifact is another model
