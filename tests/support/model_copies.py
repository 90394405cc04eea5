"""Copies of the small model for tests of what a worker loads: another host's copy, a stored version."""

import json
import shutil
from pathlib import Path

from django.conf import settings

from registry.archive import pack, sha256_hex
from registry.models import ModelVersion


def model_copy(target: Path, edit_settings=None) -> Path:
    """The small model's files (not its dev splits) under `target`, slotwise.json edited if asked."""
    target.mkdir(parents=True)
    for path in Path(settings.FAST_MODEL_DIR).iterdir():
        if path.is_file():
            shutil.copy2(path, target / path.name)
    if edit_settings:
        stored = json.loads((target / "slotwise.json").read_text())
        edit_settings(stored)
        (target / "slotwise.json").write_text(json.dumps(stored))
    return target


def stored_small_model(catalog, folder: Path, name: str) -> ModelVersion:
    """A trained version of `catalog` holding the small model labelled `name` in its slotwise.json:
    its own bytes and fingerprint, the small model's values."""
    data = pack(model_copy(folder / name, lambda stored: stored.update(label=name)))
    return ModelVersion.objects.create(
        kind=ModelVersion.Kind.TRAINED, name=name, catalog=catalog, archive=data, sha256=sha256_hex(data),
        size_bytes=len(data),
    )  # fmt: skip
