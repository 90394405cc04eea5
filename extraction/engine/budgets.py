"""Token budgets (the gap of a value's slot): the one default, and a model directory's own.

A model directory's slotwise.json may carry ``attribute_budgets`` (attribute -> tokens) and a
``default_budget`` (written by the training command); DEFAULT_BUDGET serves where neither the
caller nor the model says.
"""

from __future__ import annotations

import json
import pathlib

from extraction.domain import DEFAULT_TOKEN_BUDGET as DEFAULT_BUDGET  # neither schema nor model gives one


def model_budgets(model_dir, max_tokens: int | None = None) -> tuple[dict[str, int], int]:
    """(attribute -> budget, default budget) from model_dir's slotwise.json, else ({}, DEFAULT_BUDGET);
    max_tokens, when given, overrides the default."""
    path = pathlib.Path(model_dir) / "slotwise.json" if model_dir else None
    conf = json.loads(path.read_text()) if path and path.is_file() else {}
    default = max_tokens or int(conf.get("default_budget", DEFAULT_BUDGET))
    return {k: int(v) for k, v in conf.get("attribute_budgets", {}).items()}, default
