"""A large first read tokenises in a child process while it reads the vectors: the lexical index is the one a
build in this process makes, a child that dies leaves it built here, and no child outlives the read it serves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from test_snapshot_answers import generate
from tooling import processes

import onetool_code
from onetool_code.errors import IndexUnreadableError
from onetool_code.index import lexical, lexical_process, live, vector_reads
from onetool_code.index import store as derived
from onetool_code.index.store import STORE
from onetool_code.names import query_tokens
from onetool_code.schema import Filters

CHUNKS, DIMS = 45_000, 16  # past lexical_process.MIN_CHUNKS, with vectors to read meanwhile


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return generate(tmp_path_factory.mktemp("lexical-process"), chunks=CHUNKS, dims=DIMS)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    STORE.clear()
    yield tmp_path / "cache"
    STORE.clear()


@pytest.fixture
def children(monkeypatch):
    """Every child process a first read starts (the real ones), with ``kill_at_once``: SIGKILL each as soon as it
    has started, as the kernel's OOM killer would."""
    started: list[subprocess.Popen] = []
    popen = subprocess.Popen

    class Recorded(popen):  # type: ignore[misc, valid-type]
        kill_at_once = False

        def __init__(self, *args, **options):
            super().__init__(*args, **options)
            started.append(self)
            if Recorded.kill_at_once:
                os.kill(self.pid, signal.SIGKILL)

    monkeypatch.setattr(lexical_process.subprocess, "Popen", Recorded)
    return started, Recorded


def _same_as_built_here(held) -> None:
    here = lexical.build(held.chunks)
    there = held.lexical_index
    for name in ("data", "indices", "indptr"):
        assert np.array_equal(np.asarray(there.retriever.scores[name]), here.retriever.scores[name]), name
    assert there.retriever.vocab_dict == here.retriever.vocab_dict
    assert np.array_equal(there.lengths, here.lengths)
    queries = [query_tokens(q) for q in ("sym123", "return 4077", "def sym9", "vendor pkg3 module")]
    assert there.rank(queries, Filters(), 20) == here.rank(queries, Filters(), 20)


def test_a_large_first_read_tokenises_in_a_child_and_answers_as_a_build_here(generated, cache, children, monkeypatch):
    started, _ = children
    here = []
    monkeypatch.setattr(lexical, "build", lambda chunks: here.append(chunks))  # the parent must not build one
    held = live.view(generated.root, generated.db).snapshot
    monkeypatch.undo()
    assert here == []
    assert [c.returncode for c in started] == [0]
    assert "lexical_process" in " ".join(started[0].args)
    _same_as_built_here(held)
    assert (held.folder / "lexical" / "lengths.npy").exists()  # moved into the published snapshot
    assert not [p for p in cache.rglob("*") if derived.SPILL in p.name]


def test_a_small_first_read_tokenises_here(generated, cache, children, monkeypatch):
    started, _ = children
    monkeypatch.setattr(lexical_process, "MIN_CHUNKS", CHUNKS + 1)
    held = live.view(generated.root, generated.db).snapshot
    assert started == []
    _same_as_built_here(held)


def test_a_child_that_dies_leaves_the_index_built_here(generated, cache, children):
    started, recorded = children
    recorded.kill_at_once = True
    held = live.view(generated.root, generated.db).snapshot
    assert [c.returncode for c in started] == [-signal.SIGKILL]
    _same_as_built_here(held)


def test_a_first_read_that_fails_kills_its_child(generated, cache, children, monkeypatch):
    started, _ = children

    def fails(*args, **options):
        raise IndexUnreadableError("Cannot read the index: it changed while its vectors were read.")

    monkeypatch.setattr(vector_reads, "build", fails)
    with pytest.raises(IndexUnreadableError):
        live.view(generated.root, generated.db)
    assert [c.returncode for c in started] == [-signal.SIGKILL]
    assert not [p for p in cache.rglob("*") if derived.SPILL in p.name]


def test_a_first_read_that_fails_as_it_finishes_kills_its_child(generated, cache, children, monkeypatch):
    """The connection is closed and the child still tokenising when the progress report breaks (a watcher's
    closed pipe): the child must not outlive the read."""
    started, _ = children

    def report(what: str, done: int, total: int) -> None:
        if what == "lexical index":
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(live, "_reporter", lambda db_path, first: (report, lambda: None))
    with pytest.raises(BrokenPipeError):
        live.view(generated.root, generated.db)
    assert [c.returncode for c in started] == [-signal.SIGKILL]
    assert not [p for p in cache.rglob("*") if derived.SPILL in p.name]


def test_a_child_whose_parent_dies_stops_without_writing(generated, cache):
    script = "import sys; from pathlib import Path; from onetool_code.index import live; live.view(Path(sys.argv[1]), Path(sys.argv[2]))"  # fmt: skip
    env = {**os.environ, derived.CACHE_ENV: str(cache)}
    command = [sys.executable, "-c", script, str(generated.root), str(generated.db)]
    parent = subprocess.Popen(command, env=env, cwd=Path(onetool_code.__file__).parents[1])  # this copy's package
    try:
        child = _child_of(parent.pid, deadline=time.monotonic() + 60)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while processes.alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = processes.alive(child)
    if alive:
        os.kill(child, signal.SIGKILL)
    assert not alive
    assert [p for p in cache.rglob("*") if derived.SPILL in p.name]  # the killed parent's, left to the next writer
    assert not list(cache.rglob("lengths.npy"))  # the child wrote nothing


def _child_of(pid: int, deadline: float) -> int:
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                return int(stat.parent.name)
        time.sleep(0.01)
    raise AssertionError("the first read started no child")
