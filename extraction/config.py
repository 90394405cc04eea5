"""Which models a run may use and what their directories say (labels, dev precision curves).

The settings of runs themselves (lease length, batch size, retries ...) are declared once, with
their environment variables, in slotwise/settings.py. Read here without the engine's torch: only
its torch-free modules are imported.
"""

import math
from pathlib import Path

from django.conf import settings

from extraction.engine.api import model_settings
from extraction.engine.base_model import is_adapter

BUNDLED = ""  # Run.model_dir value meaning "the bundled model (the engine's default)"


def model_choices() -> list[tuple[str, str]]:
    """The models a run may use: the default one, the small fast one, and any directory configured
    on the workers (EXTRACTION_MODEL_DIRS, comma-separated; the workers must see the same paths)."""
    choices = [(BUNDLED, bundled_model_label())]
    others = [settings.FAST_MODEL_DIR, *settings.EXTRACTION_MODEL_DIRS]
    for path in dict.fromkeys(others):
        if path != settings.SLOTWISE_MODEL_DIR and has_model(Path(path)):
            choices.append((path, model_label(Path(path))))
    return choices


def has_model(path: Path) -> bool:
    """A full model directory or a LoRA artifact (the engine merges it at load)."""
    return (path / "config.json").is_file() or is_adapter(path)


def _slotwise_json(path: Path) -> dict:
    """The model directory's slotwise.json, read by the engine's one reader (model_settings); {} when
    it is missing or unreadable: the web side then shows the directory's name instead of failing."""
    try:
        stored = model_settings(path)
    except (OSError, ValueError):
        return {}
    return stored if isinstance(stored, dict) else {}


def model_label(path: Path) -> str:
    """The label its slotwise.json gives (what it is and its dev F1), else the directory name."""
    return _slotwise_json(path).get("label") or path.name


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
    stored = _slotwise_json(path)
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
