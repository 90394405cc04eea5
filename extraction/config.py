"""Settings of extraction runs, read from the environment at call time so a worker started with a
different value (the fault drill's short leases) uses it without a settings change."""

import json
import math
from pathlib import Path

from django.conf import settings

from extraction.engine.base_model import is_adapter
from slotwise.env import env_int, env_list

# How long a lease on a batch lasts; the worker renews it every third of this while it decodes, so a
# killed worker's products are takeable again after at most this many seconds.
DEFAULT_LEASE_SECONDS = 30
# Products per leased batch: the engine stacks them into HPD prompts (or AR batch rows) as it chooses.
DEFAULT_BATCH_SIZE = 16
# A product whose batch was lost this many times (its worker died each time) is marked failed.
DEFAULT_MAX_ATTEMPTS = 3
# One task works this long, then sends itself again: a warm shutdown waits one slice, not a run.
DEFAULT_TASK_SECONDS = 60
# Wake-up messages sent when a run starts: each lets one more idle worker join the run.
DEFAULT_WAKEUPS = 4
# A run whose model failed to load this many times (all workers together) fails; until then it
# waits for a worker that can load it, the run page showing every failure.
DEFAULT_MAX_LOAD_FAILURES = 3
# A worker process that could not load a model tries it again only after this long (the reaper's
# wake-ups bring it back), so a broken model costs one load per worker per minute, not a busy loop.
DEFAULT_LOAD_RETRY_SECONDS = 60


def drill_write_pause_seconds() -> float:
    """The fault drill's window for killing a worker while it writes a batch: record_results waits
    this long inside its transaction, after the values and before the commit. 0 (off) but in a drill."""
    return max(0, env_int("EXTRACTION_DRILL_WRITE_PAUSE_SECONDS", 0))


def database_wait_seconds() -> int:
    """How long a worker that lost PostgreSQL waits for it to come back before its task gives up
    (Celery retries the task later)."""
    return max(1, env_int("EXTRACTION_DATABASE_WAIT_SECONDS", 120))


def lease_seconds() -> int:
    return max(3, env_int("EXTRACTION_LEASE_SECONDS", DEFAULT_LEASE_SECONDS))


def batch_size() -> int:
    return max(1, env_int("EXTRACTION_BATCH_SIZE", DEFAULT_BATCH_SIZE))


def max_attempts() -> int:
    return max(1, env_int("EXTRACTION_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS))


def task_seconds() -> int:
    return max(1, env_int("EXTRACTION_TASK_SECONDS", DEFAULT_TASK_SECONDS))


def wakeups_per_run() -> int:
    return max(1, env_int("EXTRACTION_WAKEUPS", DEFAULT_WAKEUPS))


def max_load_failures() -> int:
    return max(1, env_int("EXTRACTION_MAX_LOAD_FAILURES", DEFAULT_MAX_LOAD_FAILURES))


def load_retry_seconds() -> int:
    return max(0, env_int("EXTRACTION_LOAD_RETRY_SECONDS", DEFAULT_LOAD_RETRY_SECONDS))


BUNDLED = ""  # Run.model_dir value meaning "the bundled model (the engine's default)"


def model_choices() -> list[tuple[str, str]]:
    """The models a run may use: the default one, the small fast one, and any directory configured
    on the workers (EXTRACTION_MODEL_DIRS, comma-separated; the workers must see the same paths)."""
    choices = [(BUNDLED, bundled_model_label())]
    others = [settings.FAST_MODEL_DIR, *env_list("EXTRACTION_MODEL_DIRS")]
    for path in dict.fromkeys(others):
        if path != settings.SLOTWISE_MODEL_DIR and has_model(Path(path)):
            choices.append((path, model_label(Path(path))))
    return choices


def has_model(path: Path) -> bool:
    """A full model directory or a LoRA artifact (the engine merges it at load)."""
    return (path / "config.json").is_file() or is_adapter(path)


def model_settings(path: Path) -> dict:
    """The model directory's slotwise.json, read without the engine (the web process has no torch);
    {} when it is missing or unreadable."""
    try:
        stored = json.loads((path / "slotwise.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


def model_label(path: Path) -> str:
    """The label its slotwise.json gives (what it is and its dev F1), else the directory name."""
    return model_settings(path).get("label") or path.name


def run_model_path(model_dir: str) -> Path:
    """The directory a run's model_dir names (BUNDLED: the default model)."""
    return Path(model_dir or settings.SLOTWISE_MODEL_DIR)


class NoPrecisionCurve(LookupError):
    """The model has no usable dev precision curve for a decoder; the message says what is missing."""


CURVE_ROW = ("threshold", "precision", "n", "low", "high")


def dev_precision_curve(path: Path, decoder: str) -> list[tuple[float, float, int, float, float]]:
    """slotwise.json "calibration" -> "precision_curve" -> decoder: rows of (threshold, precision,
    values, Wilson 95% low, high) measured on the dev sets (`evaluate --fit-calibration` writes it).
    Raises NoPrecisionCurve naming what is missing or malformed."""
    where = f"{path / 'slotwise.json'}"
    fit = "run `python -m extraction evaluate --fit-calibration` on this model to measure it"
    stored = model_settings(path)
    block = stored.get("calibration")
    if not isinstance(block, dict):
        raise NoPrecisionCurve(f'{where} has no "calibration" block: {fit}')
    if (
        "extractive" in block
        and "extractive" in stored
        and bool(block["extractive"]) != bool(stored["extractive"])
    ):
        raise NoPrecisionCurve(f"{where}: the calibration was fitted under the other decoding mode: {fit}")
    curves = block.get("precision_curve")
    if not isinstance(curves, dict) or decoder not in curves:
        raise NoPrecisionCurve(f"{where} has no calibration → precision_curve → {decoder}: {fit}")
    rows = []
    for i, row in enumerate(curves[decoder] if isinstance(curves[decoder], list) else [None]):
        if not (isinstance(row, list) and len(row) == len(CURVE_ROW) and all(_is_number(x) for x in row)):
            raise NoPrecisionCurve(
                f"{where}: precision_curve → {decoder} row {i + 1} is not [{', '.join(CURVE_ROW)}]: {row!r}"
            )
        threshold, precision, n, low, high = row
        rows.append((float(threshold), float(precision), int(n), float(low), float(high)))
    if not rows:
        raise NoPrecisionCurve(f"{where}: precision_curve → {decoder} is empty: {fit}")
    return sorted(rows)


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def bundled_model_label() -> str:
    """Says whether the default model is there: without its weights the workers fall back to a random
    stand-in, and an admin starting a run should know its values will be noise."""
    if not bundled_model_missing():
        return f"Default model: {model_label(Path(settings.SLOTWISE_MODEL_DIR))}"
    return "Random stand-in (no default model yet: run `make model`)"


def bundled_model_missing() -> bool:
    return not has_model(Path(settings.SLOTWISE_MODEL_DIR))
