"""The OneTool pack file: imports fast and cannot fail, thin calls into the library, documented for agents."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import onetool_code
from onetool_code import pack

PACK_FILE = Path(pack.__file__)


def test_pack_file_imports_standalone_with_heavy_modules_blocked():
    """OneTool loads the file by path, not as part of the package; duckdb, openai and tree-sitter must not
    be needed to import it (they load on the first call), nor the MCP SDK (only the mcp command uses it)."""
    code = f"""
import importlib.util, sys, time, json
for name in ("duckdb", "openai", "tree_sitter", "tree_sitter_language_pack", "numpy", "structlog", "yaml", "mcp", "anyio"):
    sys.modules[name] = None
started = time.perf_counter()
spec = importlib.util.spec_from_file_location("ot_tool.tools.code", {str(PACK_FILE)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({{"seconds": time.perf_counter() - started, "pack": module.pack, "all": module.__all__}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    loaded = json.loads(out.stdout)
    assert loaded["pack"] == "code" and loaded["all"] == ["related", "search", "search_batch", "status", "usages"]
    assert loaded["seconds"] < 0.5


def test_pack_functions_are_defined_in_the_file_keyword_only_and_documented():
    for name in pack.__all__:
        function = getattr(pack, name)
        assert function.__module__ == pack.__name__
        parameters = inspect.signature(function).parameters.values()
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
        doc = inspect.getdoc(function)
        assert "Args:" in doc and "Returns:" in doc and "Example:" in doc
        for parameter in parameters:
            assert f"    {parameter.name}: " in doc, f"{name}: {parameter.name} undocumented"


def test_pack_parameters_match_the_library():
    for name in pack.__all__:
        ours = inspect.signature(getattr(pack, name)).parameters
        library = inspect.signature(getattr(onetool_code, name)).parameters
        for parameter in ours.values():
            assert parameter.name in library
            assert parameter.default == library[parameter.name].default, parameter.name


def test_pack_search_equals_library_search(sample_index, monkeypatch):
    monkeypatch.setenv("OT_CWD", str(sample_index.root))
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", sample_index.base_url)
    assert pack.search(query="cache eviction") == onetool_code.search(query="cache eviction")
    assert pack.search_batch(queries="a cache|a limiter") == onetool_code.search_batch(queries="a cache|a limiter")
    # The index's age may tick over a second between the two calls.
    age = re.compile(r"updated .+? ago")
    assert age.sub("", pack.status()) == age.sub("", onetool_code.status())
    like = {"file": "src/bookshelf/retry.py", "line": 40, "exclude": "test", "limit": 4}
    assert pack.related(**like) == onetool_code.related(**like)
    assert re.fullmatch(r"Found \d results for: like src/bookshelf/retry\.py:40", pack.related(**like).splitlines()[0])
    assert pack.usages(name="backoff_delays") == onetool_code.usages(name="backoff_delays")
    assert pack.usages(name="backoff_delays").startswith("1 use of backoff_delays in 1 file")


def test_outside_onetool_there_is_no_host():
    from onetool_code import settings

    assert settings.onetool_host() is None
