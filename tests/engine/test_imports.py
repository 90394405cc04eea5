"""The engine imports no Django; the metric and data loader import no torch (the web imports them)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_it_imports_the_engine_without_django():
    code = (
        "import sys, extraction.engine.api, extraction.engine.decode.hpd, extraction.engine.decode.ar, "
        "extraction.engine.evaluate.command\n"
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), 'django imported'\n"
    )
    res = run(code)
    assert res.returncode == 0, res.stderr


def test_metric_data_layout_and_api_import_no_torch():
    code = (
        "import sys, extraction.engine.metric, extraction.engine.data, extraction.engine.layout, "
        "extraction.engine.api\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
        "assert 'django' not in sys.modules\n"
    )
    res = run(code)
    assert res.returncode == 0, res.stderr
