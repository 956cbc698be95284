"""Every message that names a next step names one that works where it is read: the command line's messages are
followed as commands (real processes), the library's and MCP's as calls (issue 36, item 3)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE, build_index
from test_mcp_server import talk, text

import onetool_code

NO_KEY = {
    "OPENAI_API_KEY",
    "VOYAGE_API_KEY",
    "CHUNKHOUND_EMBEDDING__API_KEY",
    "CHUNKHOUND_EMBEDDING__BASE_URL",
    "OT_CWD",
}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line as a user runs it, with no embeddings key anywhere."""
    env = {k: v for k, v in os.environ.items() if k not in NO_KEY}
    return subprocess.run(
        [sys.executable, "-m", "onetool_code", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _command_after(marker: str, message: str) -> list[str]:
    """The ``python -m onetool_code ...`` command a message names after ``marker``, as arguments."""
    named = message.split(marker, 1)[1]
    command = re.match(r"python -m onetool_code [^,;)]+", named)
    assert command is not None, message
    return shlex.split(command.group(0))[3:]


@pytest.fixture
def unindexed(tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    return root


def test_the_not_indexed_message_names_an_indexer_command_that_works_without_a_key(unindexed):
    said = _cli("search", "retry", "--path", str(unindexed), "--mode", "lexical", cwd=unindexed)
    assert said.returncode == 1 and said.stderr.startswith("Error: Project not indexed. Run: chunkhound index ")
    keyless = _command_after("without an embeddings key, enough for words: ", said.stderr)
    assert keyless == ["index", str(unindexed), "--no-embeddings"]
    assert _cli(*keyless, cwd=unindexed).returncode == 0
    answer = _cli("search", "retry", "--path", str(unindexed), "--mode", "lexical", cwd=unindexed)
    assert (answer.returncode, answer.stdout.split(" ")[0]) == (0, "Found")


def test_the_indexer_without_a_key_names_its_own_flag(unindexed):
    said = _cli("index", str(unindexed), cwd=unindexed)
    assert said.returncode == 1
    assert 'mode="lexical"' not in said.stderr and "--mode" not in said.stderr
    instead = _command_after("needs none: ", said.stderr)
    assert instead == ["index", str(unindexed), "--no-embeddings"]
    assert _cli(*instead, cwd=unindexed).returncode == 0


def test_an_index_without_vectors_names_a_search_in_words_on_each_surface(unindexed, tmp_path):
    """``--like`` refuses ``--mode``: its message names a search in words, which then answers; the library and
    MCP name the call, never a flag."""
    build_index(unindexed, None, embeddings=False)
    root = str(unindexed)
    like = _cli("search", "--like", "src/bookshelf/retry.py:40", "--path", root, cwd=unindexed)
    assert like.returncode == 1 and 'search "..." --mode lexical' in like.stderr
    assert "mode=" not in like.stderr
    words = _cli("search", "retry", "--mode", "lexical", "--path", root, cwd=unindexed)
    assert words.returncode == 0 and words.stdout.startswith("Found ")
    semantic = _cli("search", "retry", "--mode", "semantic", "--path", root, cwd=unindexed)
    assert "Use --mode lexical" in semantic.stderr
    status = _cli("status", "--path", root, cwd=unindexed).stdout
    assert "Embeddings: none (lexical search only: --mode lexical)" in status.split("\n")
    assert 'Embeddings: none (lexical search only: mode="lexical")' in onetool_code.status(path=root).split("\n")

    related = onetool_code.related(file="src/bookshelf/retry.py", line=40, path=root)
    assert 'search by words instead: search(query="...", mode="lexical")' in related and "--" not in related
    assert 'Use mode="lexical"' in onetool_code.search(query="retry", path=root, mode="semantic")

    async def scenario(session):
        return text(await session.call_tool("related", {"file": "src/bookshelf/retry.py", "line": 40}))

    assert talk(tmp_path, ["--path", root], scenario) == related


def test_a_missing_index_file_named_by_db_names_that_file(unindexed):
    said = _cli("search", "retry", "--path", str(unindexed), "--db", "nothere.db", cwd=unindexed)
    named = unindexed / "nothere.db"
    assert said.stderr == (
        f"Error: No index at {named}, the index file named by --db (or tools.code.db, the project's .chunkhound.json, "
        f"CHUNKHOUND_DATABASE__PATH): check that path, or write the index there with chunkhound index {unindexed} "
        f"--db {named}\n"
    )
    assert "named by db " in onetool_code.search(query="retry", path=str(unindexed), db="nothere.db")


def test_the_budgets_hint_names_flags_on_the_command_line_and_parameters_elsewhere(sample_index):
    options = ["--mode", "lexical", "--content", "always", "--max-bytes", "900", "--path", str(sample_index.root)]
    printed = _cli("search", "retry backoff", *options, cwd=sample_index.root).stdout
    assert printed.rstrip().endswith("--content always with --limit 1, --expand 5, or --max-bytes 1800.")
    given = onetool_code.search(
        query="retry backoff", path=str(sample_index.root), mode="lexical", content="always", max_bytes=900
    )
    assert given.endswith('content="always" with limit=1, expand=5, or max_bytes=1800.')
