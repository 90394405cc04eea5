"""The house's invariants, each a test: the engine imports no Django, the web process never imports
torch, no import cycle between the project's modules (imports inside functions count: a cycle hidden
in a function body is still a cycle), the apps stacked in layers that import only downwards (no loop
between apps), and small functions in the engine.

The import graph is built with `ast` over the project's own .py files (tests and migrations aside),
so it sees every import, at a module's top or in a function, whether or not it runs."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {"tests", "migrations", "node_modules", "staticfiles", "static", "templates"}
MAX_ENGINE_FUNCTION_LINES = 60

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
    for part in ("models", "views", "urls", "forms", "admin", "tasks", "services", "progress", "domain"):
        name = f"{config.name}.{part}"
        if importlib.util.find_spec(name.rsplit(".", 1)[0]) and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
            loaded.append(name)
for name in ("runner.leases", "runner.loop", "runner.decoding", "runner.failures", "runner.training.job"):
    importlib.import_module(name)  # what a worker loads before its first batch or job
    loaded.append(name)
get_resolver().url_patterns  # the whole URL map, and every view module it names
import slotwise.wsgi, workers.celery
print("LOADED", " ".join(loaded))
print("TORCH", "torch" in sys.modules, "transformers" in sys.modules)
"""


def test_the_web_process_never_imports_torch():
    """Every app's models, views, urls, forms, admin, tasks and services, and the worker loop before
    its first batch (what Django, a Celery producer and a worker load) leave torch out."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "catalog.views" in result.stdout and "runner.loop" in result.stdout
    assert "TORCH False False" in result.stdout, result.stdout


# --- the import graph ------------------------------------------------------------------------------


def project_files(root: Path = ROOT) -> dict[str, Path]:
    """{dotted module name: path} of the project's own modules, tests and migrations aside."""
    modules = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).parts
        if any(part.startswith(".") or part in SKIPPED_DIRS for part in parts[:-1]):
            continue
        names = list(parts[:-1]) + ([] if path.name == "__init__.py" else [path.stem])
        if names:
            modules[".".join(names)] = path
    return modules


def imported_modules(path: Path, module: str = "", is_package: bool = False) -> set[str]:
    """Every module a source file imports, at its top or inside a function (relative ones resolved
    against `module`); `from a import b` names both a and a.b, whichever of them is a module."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                found.add(base)
            found |= {f"{base}.{alias.name}" if base else alias.name for alias in node.names}
    return found


def with_packages(name: str) -> list[str]:
    """a.b.c -> [a, a.b, a.b.c]: importing a module runs its packages' __init__ first."""
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the project modules it imports} (each import's packages included, itself excluded)."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in imported_modules(path, name, path.name == "__init__.py"):
            targets |= {m for m in with_packages(imported) if m in modules}
        graph[name] = targets - {name} - set(with_packages(name))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_graph_sees_lazy_and_relative_imports_and_finds_their_cycle(tmp_path):
    write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/services.py": "def kick():\n    from app.tasks import run\n",  # the old, hidden cycle
            "app/tasks.py": "from . import worker\n",
            "app/worker.py": "import app.services as services\n",
            "app/alone.py": "import json\n",
        },
    )
    graph = import_graph(project_files(tmp_path))
    assert graph["app.services"] == {"app.tasks"} and graph["app.tasks"] == {"app.worker"}
    assert cycles(graph) == [["app.services", "app.tasks", "app.worker"]]


def test_no_import_cycle_between_the_projects_modules():
    assert cycles(import_graph(project_files())) == []


def test_the_web_side_only_enqueues_and_never_imports_the_worker_package():
    graph = import_graph(project_files())
    assert "runner.loop" in graph  # the graph knows the worker package
    for web_module in (
        "extraction.services",
        "extraction.views",
        "extraction.progress",
        "review.views.queue",
    ):
        if web_module in graph:
            assert not {
                m for m in reachable(graph, web_module) if m.split(".")[0] in {"runner", "workers"}
            }, web_module


def test_extraction_never_imports_the_task_module(tmp_path):
    lazy = tmp_path / "lazy.py"  # the old cycle hid in a function body: such an import counts too
    lazy.write_text("def kick():\n    from workers.tasks import gpu_process_run\n")
    assert "workers.tasks" in imported_modules(lazy)
    importers = sorted(
        str(path.relative_to(ROOT))
        for app in ("extraction", "training", "runner")
        for path in (ROOT / app).rglob("*.py")
        if {"workers", "workers.tasks", "workers.celery"} & imported_modules(path)
    )
    assert importers == []


def test_the_engine_imports_no_django_not_even_through_another_module():
    modules = project_files()
    graph = import_graph(modules)
    engine = [name for name in modules if name.startswith("extraction.engine")]
    assert "extraction.engine.layout" in engine
    offenders = {}
    for name in engine:
        for module in {name} | reachable(graph, name):
            django = {m for m in imported_modules(modules[module], module) if m.split(".")[0] == "django"}
            if django:
                offenders[f"{name} (via {module})" if module != name else name] = sorted(django)
    assert offenders == {}


# --- apps in layers: each imports only the layers below it (issue #32) ----------------------------

# Bottom to top. A module's app is the first part of its name. The worker side sits above what it
# writes to: runner/ leases a run's batches, decodes them, writes their values and opens their reviews
# (review.opening, review's one door), and runs a training job; workers/ (the Celery app, its queues
# and schedule, thin tasks) sits on top and hands the runner its own wake-up function. The apps below
# wake a run or a job with a signal that workers.tasks answers (extraction.services.run_wakeup,
# training.services.job_wakeup), never by importing a task.
LAYERS = (
    ("accounts", "filestore"),
    (
        "slotwise",
    ),  # the project's shared web helpers (names, params, error pages); its wiring is an entry point
    ("catalog",),
    ("registry",),  # model versions and each catalog's default: runs and training jobs both name them
    ("extraction",),
    ("review",),
    ("evaluation",),
    ("training",),
    ("runner",),
    ("workers",),
    ("health",),  # the status page asks the Celery app which workers answer
    ("scripts",),
    ("tools",),  # test and benchmark tooling: drills, benches, the learning curve (nothing imports it)
)
# What Django or a shell runs by name (settings, the root URL map, WSGI, gunicorn's config, manage.py,
# management commands): the wiring above every app. Nothing imports them, so they close no loop; they
# count as entry points only while nothing but another of them imports them (test below).
ENTRY_POINTS = {
    "manage",
    "gunicorn.conf",
    "slotwise.settings",
    "slotwise.settings_test",
    "slotwise.urls",
    "slotwise.wsgi",
}


def app_of(module: str) -> str:
    return module.split(".")[0]


def layer_of(app: str) -> int:
    return next(i for i, apps in enumerate(LAYERS) if app in apps)


def is_entry_point(module: str, graph: dict[str, set[str]]) -> bool:
    """Run by name, and imported by nothing but another named one (settings_test extends settings)."""

    def named(name: str) -> bool:
        return name in ENTRY_POINTS or ".management.commands." in name

    return named(module) and not any(module in targets for name, targets in graph.items() if not named(name))


def app_edges(graph: dict[str, set[str]]) -> set[str]:
    """Every import from one app into another, as "module -> module" (entry points and the tooling aside)."""
    return {
        f"{name} -> {target}"
        for name, targets in graph.items()
        if not is_entry_point(name, graph)
        for target in targets
        if app_of(target) != app_of(name)
    }


def app_graph(edges: set[str]) -> dict[str, set[str]]:
    apps: dict[str, set[str]] = {}
    for edge in edges:
        source, target = (app_of(m) for m in edge.split(" -> "))
        apps.setdefault(source, set()).add(target)
        apps.setdefault(target, set())
    return apps


def upward_edges(edges: set[str]) -> set[str]:
    """The imports that reach an app in the same or a higher layer."""
    return {
        edge
        for edge in edges
        if layer_of(app_of(edge.split(" -> ")[1])) >= layer_of(app_of(edge.split(" -> ")[0]))
    }


def test_every_app_has_its_layer_and_the_entry_points_are_what_they_say():
    graph = import_graph(project_files())
    assert {app_of(name) for name in graph} - {"manage", "gunicorn"} <= {
        app for apps in LAYERS for app in apps
    }
    assert {"slotwise.settings", "slotwise.urls", "slotwise.wsgi"} <= {
        m for m in graph if is_entry_point(m, graph)
    }
    # a module something imports is no entry point, whatever its name
    assert not is_entry_point("catalog.management.commands.load_demo_catalog", graph)


def test_apps_import_only_downwards_and_no_loop_between_them():
    edges = app_edges(import_graph(project_files()))
    assert "runner.leases -> review.opening" in edges  # the graph sees an app's imports of another app
    assert "workers.tasks -> runner.loop" in edges  # inside a function too
    assert "extraction.services -> registry.versions" in edges  # a run names its model version
    assert upward_edges(edges) == set()
    assert cycles(app_graph(edges)) == []


def test_the_app_layering_catches_a_loop_planted_in_a_copy_of_the_graph():
    """Negative control: the web side reaching the runner (a lazy import, as the old kick_run's),
    catalog reaching extraction (the old DEFAULT_TOKEN_BUDGET) and the run form scoring versions
    itself (the old loop through training) are caught as loops between apps."""
    graph = import_graph(project_files())
    planted = {
        **graph,
        "extraction.services": graph["extraction.services"] | {"runner.loop"},
        "catalog.models": graph["catalog.models"] | {"extraction.domain"},
        "extraction.forms": graph["extraction.forms"] | {"review.version_scores"},
    }
    edges = app_edges(planted)
    assert upward_edges(edges) == {
        "extraction.services -> runner.loop",
        "catalog.models -> extraction.domain",
        "extraction.forms -> review.version_scores",
    }
    # every app on a path back from extraction to catalog is in the loop
    assert cycles(app_graph(edges)) == [["catalog", "extraction", "registry", "review", "runner", "training"]]


# --- sizes: cohesion decides where code goes, not a module's line count (issue #32 retired the 450-line
# cap); a function of the engine still fits on a screen --------------------------------------------


def long_engine_functions() -> dict[str, int]:
    found = {}
    for name, path in sorted(project_files().items()):
        if not name.startswith("extraction.engine"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_ENGINE_FUNCTION_LINES:
                    found[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    return found


def test_the_size_checks_measure_what_they_say():
    modules = {str(path.relative_to(ROOT)) for path in project_files().values()}
    assert "scripts/services.py" in modules and "extraction/engine/api.py" in modules
    assert not any(path.startswith("tests/") or "/migrations/" in path for path in modules)


def test_no_engine_function_is_over_60_lines():
    assert long_engine_functions() == {}


# --- the engine's rooms: decode/, train/ and evaluate/ over a shared core --------------------------

ROOMS = ("decode", "train", "evaluate")
# which rooms each room may import (every room may import the core): training builds its rows under
# decode's constraints and masks, evaluation runs decode; decode knows neither
MAY_IMPORT = {"core": set(), "decode": set(), "train": {"decode"}, "evaluate": {"decode"}}
DOOR = "extraction.engine.api"  # the engine's public door (Extractor) sits on the core and opens onto decode
CLI = "extraction.engine.cli"  # `python -m extraction`: above every room, imported by no engine module


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in ROOMS else "core"


def room_breaches(graph: dict[str, set[str]]) -> list[str]:
    breaches = []
    for name, targets in sorted(graph.items()):
        if not name.startswith("extraction.engine") or name in (DOOR, CLI):
            continue
        for target in sorted(targets):
            if target == CLI:
                breaches.append(f"{name} -> {target}")
            elif target.startswith("extraction.engine.") and target != DOOR:
                here, there = room_of(name), room_of(target)
                if there not in {"core", here} | MAY_IMPORT[here]:
                    breaches.append(f"{name} -> {target}")
            elif target == DOOR:
                if room_of(name) in {"core", "decode"}:
                    breaches.append(f"{name} -> {target}")
    return breaches


def test_the_engine_rooms_import_only_downwards():
    modules = project_files()
    graph = import_graph(modules)
    assert {room_of(name) for name in modules if name.startswith("extraction.engine")} == {"core", *ROOMS}
    assert room_breaches(graph) == []
    # negative control: decode reaching into train, and the core reaching into decode, are caught
    planted = {
        **graph,
        "extraction.engine.decode.hpd": graph["extraction.engine.decode.hpd"]
        | {"extraction.engine.train.trainer"},
        "extraction.engine.layout": graph["extraction.engine.layout"] | {"extraction.engine.decode.hpd"},
    }
    assert room_breaches(planted) == [
        "extraction.engine.decode.hpd -> extraction.engine.train.trainer",
        "extraction.engine.layout -> extraction.engine.decode.hpd",
    ]
