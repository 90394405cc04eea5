"""The web process never imports torch: loading every app's models, views, urls, forms, admin and
tasks (what Django and a Celery producer load) must leave torch out of sys.modules."""

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
    for part in ("models", "views", "urls", "forms", "admin", "tasks", "services"):
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
