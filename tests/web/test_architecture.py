"""The web process never imports torch: loading every app's models, views, urls, forms, admin,
tasks, services and the worker loop (what Django, a Celery producer and a worker before its first
batch load) must leave torch out of sys.modules. And extraction never imports the Celery task
module, which imports extraction's worker loop: no import cycle between the two."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, importlib.util, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slotwise.settings_test")
import django
django.setup()
from django.apps import apps
from django.urls import get_resolver
root = os.getcwd()
loaded = []
for config in apps.get_app_configs():
    if not os.path.abspath(config.path).startswith(root):
        continue  # Django's own apps and third-party packages
    for part in ("models", "views", "urls", "forms", "admin", "tasks", "services", "leases", "processing"):
        name = f"{config.name}.{part}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
            loaded.append(name)
get_resolver().url_patterns  # the whole URL map, and every view module it names
import slotwise.wsgi, workers.celery
print("LOADED", " ".join(loaded))
print("TORCH", "torch" in sys.modules, "transformers" in sys.modules)
"""


def test_the_web_process_never_imports_torch():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "catalog.views" in result.stdout and "catalog.urls" in result.stdout
    assert "TORCH False False" in result.stdout, result.stdout


def imported_modules(path: Path) -> set[str]:
    """Every module a source file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def test_extraction_never_imports_the_task_module(tmp_path):
    lazy = tmp_path / "lazy.py"  # the old cycle hid in a function body: such an import counts too
    lazy.write_text("def kick():\n    from workers.tasks import gpu_process_run\n")
    assert "workers.tasks" in imported_modules(lazy)
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "extraction").rglob("*.py")
        if "workers.tasks" in imported_modules(path)
    )
    assert importers == []
