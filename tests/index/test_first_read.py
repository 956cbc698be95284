"""A first read writes the vectors to disk as it reads them: the float32 matrix and its codes are never whole in
the process's memory, what is left of the writing is removed, and a snapshot of another format is never read."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from test_snapshot_answers import generate

from onetool_code.index import live, snapshot, vector_reads
from onetool_code.index import store as derived
from onetool_code.index.store import STORE

CHUNKS, DIMS = 45_000, 768  # a float32 matrix of 138 MB, far above what the first read keeps beside its rows


@pytest.fixture
def generated(tmp_path, monkeypatch):
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    STORE.clear()
    yield generate(tmp_path / "project", chunks=CHUNKS, dims=DIMS)
    STORE.clear()


def test_the_first_read_never_holds_the_matrix_in_memory(generated, monkeypatch):
    peaks = []
    build = vector_reads.build

    def traced(*args, **options):  # the vectors' read alone (the lexical index is built by a child process)
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        made = build(*args, **options)
        peaks.append(tracemalloc.get_traced_memory()[1] - start)
        return made

    monkeypatch.setattr(vector_reads, "build", traced)
    monkeypatch.setattr(vector_reads, "WINDOW_BYTES", 8 << 20)  # as 64 MB windows stand to a matrix of 8.7 GB
    tracemalloc.start()
    try:
        held = live.view(generated.root, generated.db).snapshot
    finally:
        tracemalloc.stop()
    vectors = next(v for v in held.vectors.values() if v.matrix.shape[0] == CHUNKS)
    assert isinstance(vectors.matrix, np.memmap) and isinstance(vectors.codes, np.memmap)
    assert peaks and max(peaks) < 0.5 * vectors.matrix.nbytes
    cache = derived.cache_root()
    assert not [p for p in cache.rglob("*") if derived.SPILL in p.name]  # moved into the snapshot, or removed
    published = {p.name for p in held.folder.rglob("*.npy")}
    assert {"matrix.npy", "codes.npy"} <= published


def test_a_snapshot_of_another_format_is_made_again_not_read(generated, monkeypatch):
    monkeypatch.setattr(snapshot, "FORMAT", snapshot.FORMAT - 1)
    old = live.view(generated.root, generated.db).snapshot.folder
    monkeypatch.setattr(snapshot, "FORMAT", snapshot.FORMAT + 1)
    STORE.clear()
    builds = STORE.builds
    new = live.view(generated.root, generated.db).snapshot
    assert STORE.builds == builds + 1 and new.folder != old
