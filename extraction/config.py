"""Settings of extraction runs, read from the environment at call time so a worker started with a
different value (the fault drill's short leases) uses it without a settings change."""

import json
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


def model_label(path: Path) -> str:
    """The label its slotwise.json gives (what it is and its dev F1), else the directory name."""
    try:
        label = json.loads((path / "slotwise.json").read_text(encoding="utf-8")).get("label")
    except (OSError, ValueError):
        label = None
    return label or path.name


def bundled_model_label() -> str:
    """Says whether the default model is there: without its weights the workers fall back to a random
    stand-in, and an admin starting a run should know its values will be noise."""
    if not bundled_model_missing():
        return f"Default model: {model_label(Path(settings.SLOTWISE_MODEL_DIR))}"
    return "Random stand-in (no default model yet: run `make model`)"


def bundled_model_missing() -> bool:
    return not has_model(Path(settings.SLOTWISE_MODEL_DIR))
