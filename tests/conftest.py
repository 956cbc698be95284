"""Shared fixtures: a clean environment, the local embeddings server, and real indexes of the sample project."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from openai_server import EmbeddingsServer, serve

from onetool_code import settings
from onetool_code.spans import LOGGER_NAME

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "fixtures" / "project"


@dataclass(frozen=True)
class Project:
    root: Path
    db: Path
    base_url: str

    def digest(self) -> str:
        """SHA-256 of the index file: read-only calls must leave it byte-identical."""
        return sha256(self.db)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path_factory):
    """No key, project or ChunkHound setting of the machine may leak into a test."""
    import os

    for name in list(os.environ):
        if name.startswith(("CHUNKHOUND_", "ONETOOL_CODE_", "AWS_")) or name in {"OPENAI_API_KEY", "OT_CWD"}:
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def spans(request):
    """Every span record of the test; a test fails if one carries a traceback (a bug hidden behind the API's
    error boundary), unless it is marked ``internal_error_expected``. Logging state is put back after."""
    logger = logging.getLogger(LOGGER_NAME)
    level, handlers, propagate = logger.level, list(logger.handlers), logger.propagate
    handler = _Records()
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.records
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate
    if request.node.get_closest_marker("internal_error_expected") is None:
        broken = [r.getMessage() for r in handler.records if '"traceback"' in r.getMessage()]
        assert not broken, f"internal error behind the boundary: {broken[0][:2000]}"


@pytest.fixture(autouse=True)
def fresh_derived_state():
    """Snapshots held in memory live as long as the process; each test starts without any (and, through
    ``clean_env``, with an empty cache directory)."""
    from onetool_code import index

    index.reset()
    yield
    index.reset()  # the pack and the MCP server turn background refreshes on for their process


@pytest.fixture(scope="session")
def server() -> EmbeddingsServer:
    with serve() as running:
        yield running


def ranked(root: Path, base_url: str | None, query: str, **options):
    """The engine's ranked hits for one query (before merging and formatting); ``options`` as in ``search``."""
    from onetool_code import request
    from onetool_code.search import engine

    resolved = settings.resolve(path=str(root), base_url=base_url, cache=options.get("cache"), db=options.get("db"))
    args = {name: options.get(name) for name in ("limit", "offset", "language", "chunk_type", "include", "exclude")}
    req = request.parse(
        queries=query, batch=False, expand=None, mode=options.get("mode", "semantic"), content=None, format=None,
        max_bytes=None, rerank=options.get("rerank"), **args,
    )  # fmt: skip
    return engine.run(resolved, req)


def read_compact(answer: str) -> dict:
    """A compact search answer read back as the README tells a client to: its first line is JSON, and each row's
    preview (a number after the score) and code (``c`` in its details) are that many of the lines after it, in
    row order. They are put back into the row as strings (its lines joined by line breaks)."""
    head, *below = answer.split("\n")
    envelope = json.loads(head)
    lines = iter(below)
    for row in envelope.get("results", []):
        if isinstance(row, str):
            continue
        at = 3 if isinstance(row[1], str) else 4  # after [line, what, score] or [start, end, what, score]
        if len(row) > at and isinstance(row[at], int):
            row[at] = "\n".join(next(lines) for _ in range(row[at]))
        if isinstance(row[-1], dict) and "c" in row[-1]:
            row[-1]["c"] = "\n".join(next(lines) for _ in range(row[-1]["c"]))
    assert next(lines, None) is None, "lines no row claims"
    return envelope


def compact_rows(answer: dict | str) -> list[tuple[str, int, int, list]]:
    """Each result of a compact answer as (file, start, end, row): a string in ``results`` names the file of the
    rows after it (``repository:path`` in a workspace), a row is ``[start, end, what, score, preview?, details?]``,
    or ``[line, what, score, ...]`` for one line."""
    rows, where = [], None
    for entry in (read_compact(answer) if isinstance(answer, str) else answer).get("results", []):
        if isinstance(entry, str):
            where = entry
        else:
            start, end = (entry[0], entry[0]) if isinstance(entry[1], str) else entry[:2]
            rows.append((where, start, end, entry))
    return rows


def disagreeing(snapshot: Path, name: str) -> Path:
    """One array of a snapshot folder rewritten with one row (a well-formed ``.npy``: ``np.save`` of a truncated
    copy), and the folder's record of its files' sizes made true to it: only the arrays' counts disagree. Returns
    the array's file."""
    import numpy as np

    path = snapshot / name
    array = np.load(path)
    path.unlink()  # a file of its own: a snapshot adopted from a published version links the version's files
    np.save(path, array[:1])
    meta = json.loads((snapshot / "snapshot.json").read_text(encoding="utf-8"))
    meta["manifest"][name] = path.stat().st_size
    (snapshot / "snapshot.json").write_text(json.dumps(meta), encoding="utf-8")
    return path


def build_index(root: Path, base_url: str | None, *, embeddings: bool = True) -> Path:
    """Index ``root`` with our indexer (the test suite's one way to make an index)."""
    from onetool_code.indexer import build_index as build

    resolved = settings.resolve(path=str(root), base_url=base_url)
    build(resolved, embeddings=embeddings, progress=False)
    return settled(resolved.db_path)


def chunked_index(root: Path, chunks: list[tuple[str, int, int, str, str]]) -> Path:
    """An index with ChunkHound's schema holding exactly ``chunks`` (path, start, end, chunk type, symbol), each
    chunk's code the file's lines ``start``..``end`` and its language the file's, no vectors: the chunks ChunkHound
    may write (overlapping, pieces of one definition, a Java interface whole) without its parser deciding them."""
    import duckdb

    from onetool_code import schema
    from onetool_code.project.languages import language_for

    db = root / ".chunkhound" / "db" / "chunks.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(db)) as con:
        for statement in schema.SCHEMA_DDL:
            con.execute(statement)
        con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", list(schema.SCHEMA_VERSION_ROW))
        ids: dict[str, int] = {}
        for path, start, end, chunk_type, symbol in chunks:
            language = language_for(Path(path)) or "unknown"
            if path not in ids:
                ids[path] = len(ids) + 1
                con.execute(
                    "INSERT INTO files (id, path, name, extension, language) VALUES (?, ?, ?, ?, ?)",
                    [ids[path], path, path.rsplit("/", 1)[-1], path.rpartition(".")[2], language],
                )
            code = "\n".join((root / path).read_text().split("\n")[start - 1 : end])
            con.execute(
                "INSERT INTO chunks (file_id, chunk_type, symbol, code, start_line, end_line, language) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [ids[path], chunk_type, symbol, code, start, end, language],
            )
    return settled(db)


def settled(db: Path) -> Path:
    """The index as if written a minute ago: a snapshot reads a file only once it has been quiet for a moment
    (``live.QUIET_SECONDS``), and a test of something else need not wait for that."""
    then = time.time() - 60
    os.utime(db, (then, then))
    return db


@pytest.fixture(scope="session")
def sample_index(server, tmp_path_factory) -> Project:
    """The sample project, indexed once per session with vectors from the test server. Treat as read-only."""
    root = tmp_path_factory.mktemp("sample") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    db = build_index(root, server.base_url)
    return Project(root, db, server.base_url)


@pytest.fixture
def project(sample_index, tmp_path) -> Project:
    """A private copy of the indexed sample project, for tests that change files or the index."""
    root = tmp_path / "project"
    shutil.copytree(sample_index.root, root)
    return Project(root, root / sample_index.db.relative_to(sample_index.root), sample_index.base_url)


@pytest.fixture(scope="session")
def chunkhound():
    """The real ChunkHound 6.1.0 in its own cached virtual environment (tests marked ``chunkhound``)."""
    from tooling.chunkhound_env import ensure_chunkhound

    return ensure_chunkhound()


@pytest.fixture(scope="session")
def chunkhound_project(chunkhound, server, tmp_path_factory) -> Project:
    """The sample project indexed by ChunkHound itself (about a minute), with vectors from the test server, once
    per session. ChunkHound refuses to reopen a copy (its sidecar records the indexed root), so tests that watch
    it index share this one: each adds a file of its own and edits or removes none."""
    root = tmp_path_factory.mktemp("chunkhound") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    chunkhound.index(root, server.base_url)
    return Project(root, settled(root / ".chunkhound" / "db" / "chunks.db"), server.base_url)


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory):
    """One real S3 store (SeaweedFS on 127.0.0.1) for the whole session; each test uses a bucket of its own."""
    from tooling.seaweedfs import running

    with running(tmp_path_factory.mktemp("seaweedfs")) as store:
        yield store
