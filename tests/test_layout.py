"""The package's shape: its public surface, and imports that point one way (settings -> ... -> entry points)."""

from __future__ import annotations

import ast
from pathlib import Path

import onetool_code

PACKAGE = Path(onetool_code.__file__).parent

# A module may import only modules of a lower level (a subpackage counts as one): data flows settings -> index ->
# ranking -> formatting ->
# entry points, and a module reads knowing only what is below it. The MCP server takes its tools' descriptions
# from the pack's docstrings; the CLI starts it.
LEVELS = {
    "advice": 0, "errors": 0, "hits": 0, "names": 0, "parameters": 0, "reading": 0,
    "schema": 1, "spans": 1, "progress": 1, "transport": 1,
    "published": 1.5,
    "settings": 2, "definitions": 2,
    "embeddings": 3, "matching": 3, "ranking": 3, "source": 3, "request": 3,
    "index": 4, "reranking": 4,
    "indexer": 5, "placement": 5, "lookup": 5,
    "query_vectors": 6,
    "retrieval": 7,
    "report": 8,
    "engine": 9, "shaping": 9,
    "formatting": 10, "similar": 10, "uses": 10, "workspace": 10,
    "api": 11, "agents": 11,
    "pack": 12,
    "mcp_server": 13,
    "cli": 14, "__main__": 15, "__init__": 15,
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


def test_the_engine_imports_few_modules():
    """The engine wires a search from a few parts and knows nothing of their insides (issue 26: at most 9)."""
    assert len(_imports(PACKAGE / "engine.py")) <= 9
