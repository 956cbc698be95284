"""The package's shape: its public surface, and imports that point one way (settings -> ... -> entry points)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import onetool_code

PACKAGE = Path(onetool_code.__file__).parent

# A module may import only modules of a lower level (a folder counts as one): data flows settings -> project files
# -> index -> search -> answer -> entry points, and a module reads knowing only what is below it (the indexer writes
# with the search's embeddings request). The MCP server takes its tools' descriptions from the pack's docstrings;
# the CLI starts it.
LEVELS = {
    "advice": 0, "errors": 0, "hits": 0, "names": 0, "parameters": 0, "reading": 0,
    "schema": 1, "spans": 1, "progress": 1,
    "request": 2, "published": 2,
    "settings": 3,
    "project": 4,
    "index": 5,
    "search": 6,
    "indexer": 7,
    "answer": 8,
    "api": 9, "agents": 9,
    "pack": 10,
    "mcp_server": 11,
    "cli": 12, "__main__": 13, "__init__": 13,
}  # fmt: skip


def test_public_surface():
    assert onetool_code.__all__ == ["related", "search", "search_batch", "status", "usages"]
    assert all(callable(getattr(onetool_code, name)) for name in onetool_code.__all__)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onetool_code"):
            parts = node.module.split(".")
            if len(parts) > 1:
                found.add(parts[1])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("onetool_code."))
    return found


def test_every_module_has_a_level():
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    assert modules == set(LEVELS)


def test_imports_point_one_way():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        module = relative.parts[0] if len(relative.parts) > 1 else path.stem
        for imported in _imports(path) - {module}:
            if LEVELS[imported] >= LEVELS[module]:
                wrong.append(f"{relative} imports {imported}")
    assert not wrong, wrong


def test_the_index_is_asked_through_its_face():
    """Everything about one repository's index state lives in ``index/``: outside it, only the package's own
    names (``onetool_code.index``) are imported, never one of its modules."""
    inside = PACKAGE / "index"
    internals = {f"onetool_code.index.{p.stem}" for p in inside.glob("*.py")}
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        if inside in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported = {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
            elif isinstance(node, ast.Import):
                imported = {alias.name for alias in node.names}
            else:
                continue
            wrong += [f"{path.relative_to(PACKAGE)} imports {name}" for name in sorted(imported & internals)]
    assert not wrong, wrong


def _units(path: Path) -> set[str]:
    """The units of ours a module imports: a module of its own folder counts alone, any other folder as one."""
    folder = path.parent.name if path.parent != PACKAGE else None
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("onetool_code"):
            parts = node.module.split(".")
            if len(parts) == 1:
                found.update(alias.name for alias in node.names)
            elif parts[1] == folder:
                found.update([parts[2]] if len(parts) > 2 else [alias.name for alias in node.names])
            else:
                found.add(parts[1])
    return found - {path.stem}


@pytest.mark.parametrize(("module", "most"), [("search/engine.py", 9), ("search/retrieval.py", 8), ("api.py", 8)])
def test_the_hubs_import_few_units(module, most):
    """The engine wires a search from a few parts, and the library's functions a call from a few stages, knowing
    nothing of their insides (issue 26: the engine at most 9; issue 33: ``api`` and ``retrieval`` at most 8)."""
    assert len(_units(PACKAGE / module)) <= most, sorted(_units(PACKAGE / module))


def test_the_pipeline_shows_in_the_tree():
    """``ls`` shows the stages as folders and the ground and entry points beside them: at most 20 modules at the
    top, none over 450 lines (issue 33)."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 20, top
    long = {
        str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 450
    }
    assert not long, long


def test_the_benches_compile_and_their_imports_of_ours_resolve():
    """The benches run by hand, so nothing else tells when a move breaks one: each compiles, and every name it
    imports from the package (at the top or inside a function) exists."""
    missing = []
    for path in sorted((PACKAGE.parent / "bench").glob("*.py")):
        tree = ast.parse(compile(path.read_text(), str(path), "exec", ast.PyCF_ONLY_AST))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "onetool_code":
                module = importlib.import_module(node.module)
                for alias in node.names:
                    submodule = hasattr(module, "__path__") and importlib.util.find_spec(f"{node.module}.{alias.name}")
                    if not hasattr(module, alias.name) and not submodule:
                        missing.append(f"{path.name}: {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "onetool_code" and importlib.util.find_spec(alias.name) is None:
                        missing.append(f"{path.name}: {alias.name}")
    assert not missing, missing


def test_only_settings_reads_the_environment():
    """``settings`` is the one place that reads the outside world: no other module names ``os.environ`` or
    ``getenv`` (the cache folder's variables included)."""
    readers = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "settings" not in path.relative_to(PACKAGE).parts[:1]
        and re.search(r"\benviron\b|\bgetenv\b", path.read_text())
    ]
    assert not readers, readers
