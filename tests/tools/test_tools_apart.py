"""Issue 32: the test and benchmark tooling lives apart from the product. No product module imports
tools/ (imports inside functions count), and the write transaction's only drill seam is the hook,
None in a product process."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCT = {"tools", "tests"}


def imports_of(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def product_modules_importing_tools(root: Path) -> list[str]:
    """Paths of the product's .py files (outside tools/, tests/ and hidden folders) importing tools."""
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if parts[0] in NOT_PRODUCT or any(part.startswith(".") for part in parts):
            continue
        if any(name == "tools" or name.startswith("tools.") for name in imports_of(path.read_text())):
            found.append(str(path.relative_to(root)))
    return found


def test_no_product_module_imports_the_tooling():
    assert product_modules_importing_tools(ROOT) == []


def test_the_check_finds_a_product_module_that_imports_the_tooling(tmp_path):
    # negative control: a product module reaching into tools/ from a function body is found
    (tmp_path / "extraction").mkdir()
    (tmp_path / "extraction" / "leases.py").write_text("def f():\n    from tools.drill import write_pause\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "run.py").write_text("from extraction import leases\n")
    assert product_modules_importing_tools(tmp_path) == ["extraction/leases.py"]


def test_a_product_process_has_no_hook_in_the_write_transaction():
    from runner import leases

    assert leases.on_values_written is None
    assert "sleep" not in Path(leases.__file__).read_text()
