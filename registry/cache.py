"""A worker's local copies of model versions, keyed by fingerprint (the sha256 of the archive).

A version is fetched from PostgreSQL once per machine and unpacked into a temporary folder beside
the cache entry; its hash is checked and only then is the folder renamed into place. A rename is
atomic, so an entry that exists is whole: a worker killed mid-unpack leaves a temporary folder
(removed by the next fetch), never a half-written entry that another process would load.
"""

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings

from registry.archive import unpack
from registry.models import ModelVersion

log = logging.getLogger(__name__)

TEMP_PREFIX = ".partial-"
MODEL_DIR_PREFIX = "version:"  # Run.model_dir of a run that decodes with a stored version


class VersionMissing(LookupError):
    """The run names a model version that is no longer stored."""


def run_model_dir(version: ModelVersion) -> str:
    """What a run's model_dir says for a version: "" (the bundled model) for the shipped one."""
    return "" if version.is_shipped else f"{MODEL_DIR_PREFIX}{version.pk}"


def version_id_of(model_dir: str) -> int | None:
    """The version a run's model_dir names, or None when it names a directory."""
    if not model_dir.startswith(MODEL_DIR_PREFIX):
        return None
    return int(model_dir.removeprefix(MODEL_DIR_PREFIX))


def cache_root() -> Path:
    root = Path(settings.MODEL_CACHE_DIR)
    root.mkdir(parents=True, exist_ok=True)
    return root


def local_dir(version_id: int) -> Path:
    """The directory of a trained version on this machine, fetched and unpacked if not there yet."""
    sha256 = ModelVersion.objects.filter(pk=version_id, kind=ModelVersion.Kind.TRAINED).values_list(
        "sha256", flat=True
    )
    sha256 = sha256.first()
    if sha256 is None:
        raise VersionMissing(f"model version {version_id} is not stored (deleted?)")
    root = cache_root()
    target = root / sha256
    if target.is_dir():
        return target
    data = ModelVersion.objects.filter(pk=version_id).values_list("archive", flat=True).get()
    _remove_leftovers(root)
    partial = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=root))
    try:
        unpack(bytes(data), sha256, partial)
        os.rename(partial, target)
    except OSError:
        if not target.is_dir():
            raise
        # another process of this machine unpacked the same version first: theirs is whole
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    log.info("model version %s unpacked into %s", version_id, target)
    return target


def _remove_leftovers(root: Path) -> None:
    """Temporary folders of unpacks that were killed midway (older than a minute: not in flight)."""
    for path in root.glob(f"{TEMP_PREFIX}*"):
        try:
            if time.time() - path.stat().st_mtime > 60:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue
