"""The fault drill (`manage.py fault_drill`): its cases one after the other, one JSON line each.

A case that breaks (say, it cannot find the moment to strike) still prints its line, with `error`
saying why, and the drill goes on.
"""

import json
import logging

from django.conf import settings

from tools.drill.cases import CASE_CLASSES, Setup
from tools.drill.catalog import drill_catalog

log = logging.getLogger(__name__)


def unknown_cases(names: list[str]) -> list[str]:
    return [name for name in names if name not in CASE_CLASSES]


def run_fault_drill(
    products: int, workers: int, batch_size: int | None, timeout: float, cases: list[str], model: str, write
) -> list[str]:
    """Run `cases` on a catalog of `products` synthetic listings with `workers` real workers; write
    one JSON line per case; returns the names of the cases that were not ok."""
    setup = Setup(
        catalog=drill_catalog(f"Fault drill ({products} products)", products),
        workers=workers,
        batch_size=batch_size or max(2, min(16, products // (8 * workers))),
        model_dir=model,
        log_dir=settings.BASE_DIR / ".data" / "drill",
        timeout=timeout,
    )
    failed = []
    for name in cases:
        try:
            result = CASE_CLASSES[name](setup).run()
        except Exception as exc:  # noqa: BLE001 - one broken case must not hide the cases after it
            log.exception("fault drill case %s broke", name)
            result = {"case": name, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        write(json.dumps(result))
        if not result["ok"]:
            failed.append(name)
    return failed
