"""Which models a run may use and what their directories say (their labels).

The settings of runs themselves (lease length, batch size, retries ...) are declared once, with
their environment variables, in slotwise/settings.py. Read here without the engine's torch: only
its torch-free modules are imported.
"""

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


def bundled_model_label() -> str:
    """Says whether the default model is there: without it a run of the default model fails (the
    workers never decode with random weights), and an admin starting one should know before."""
    if not bundled_model_missing():
        return f"Default model: {model_label(Path(settings.SLOTWISE_MODEL_DIR))}"
    return "Default model: not installed (run `make model`)"


def no_model_message(directory: str) -> str:
    """What a run of the default model, and the run form, say while `directory` holds no model."""
    return f"No model is installed in {directory}: run `make model` there (a run of it fails until then)"


def bundled_model_missing() -> bool:
    return not has_model(Path(settings.SLOTWISE_MODEL_DIR))
