"""State derived from indexes: one freshness rule, one build lock per index, one memory bound."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

import onetool_code
from onetool_code import cache, derived, index
from onetool_code.derived import STORE, Key, Signature, Store


@dataclass
class Blob:
    nbytes: int


def signature_of(tmp_path: Path, name: str) -> Signature:
    (tmp_path / name).write_bytes(name.encode())
    return Signature.of(tmp_path / name)


def test_alternating_between_two_indexes_builds_each_once(sample_index, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(sample_index.root, other)
    roots = [sample_index.root, other]
    for i in range(8):
        answer = onetool_code.search(query="retry backoff", path=str(roots[i % 2]), base_url=sample_index.base_url)
        assert answer.startswith("Found ")
    assert STORE.builds == 4  # per index: its vectors and its lexical index, once each
    assert all(cache.info(root / ".chunkhound" / "db" / "chunks.db").fresh for root in roots)


def test_an_evicted_entry_earns_its_rebuild_again(tmp_path):
    store = Store(budget=150)
    a, b = Key("vectors", "a.db"), Key("vectors", "b.db")
    sig_a, sig_b = signature_of(tmp_path, "a.db"), signature_of(tmp_path, "b.db")
    assert store.ensure(a, sig_a, lambda: Blob(100), demand=1, threshold=2) is None
    assert store.ensure(a, sig_a, lambda: Blob(100), demand=1, threshold=2) == Blob(100)
    assert store.ensure(b, sig_b, lambda: Blob(100), demand=2, threshold=2) == Blob(100)  # a is evicted
    assert store.fresh(a, sig_a) is None and store.fresh(b, sig_b) == Blob(100)
    assert store.ensure(a, sig_a, lambda: Blob(100), demand=1, threshold=2) is None  # its count started over
    assert store.builds == 2


def test_a_stale_entry_is_rebuilt_and_never_served(tmp_path):
    store = Store()
    key = Key("lexical", "a.db")
    old = signature_of(tmp_path, "a.db")
    store.ensure(key, old, lambda: Blob(1), demand=1, threshold=1)
    (tmp_path / "a.db").write_bytes(b"changed, and longer")
    new = Signature.of(tmp_path / "a.db")
    assert store.fresh(key, new) is None
    assert store.ensure(key, new, lambda: Blob(2), demand=1, threshold=1) == Blob(2)
    assert store.entries("lexical", Path("a.db")) == [(Blob(2), new)]


def test_building_one_index_holds_up_neither_another_index_nor_a_second_caller(tmp_path):
    store = Store()
    a, b = Key("vectors", "a.db"), Key("vectors", "b.db")
    sig_a, sig_b = signature_of(tmp_path, "a.db"), signature_of(tmp_path, "b.db")
    release, started = threading.Event(), threading.Event()
    built: list[str] = []

    def slow_build() -> Blob:
        started.set()
        assert release.wait(10)
        built.append("a")
        return Blob(1)

    results: dict[str, object] = {}
    first = threading.Thread(
        target=lambda: results.update(first=store.ensure(a, sig_a, slow_build, demand=1, threshold=1))
    )
    second = threading.Thread(
        target=lambda: results.update(second=store.ensure(a, sig_a, slow_build, demand=1, threshold=1))
    )
    first.start()
    assert started.wait(10)
    second.start()  # waits for a's build lock, then finds a's entry built
    assert store.ensure(b, sig_b, lambda: Blob(2), demand=1, threshold=1) == Blob(2)  # while a is still building
    release.set()
    first.join(10)
    second.join(10)
    assert results == {"first": Blob(1), "second": Blob(1)} and built == ["a"]


def test_a_new_process_loads_the_vectors_a_process_before_it_saved(sample_index, monkeypatch):
    """One build per state of the index file on the machine: later processes map it and answer the first search
    from it, not by ChunkHound's SQL."""
    root, db = sample_index.root, sample_index.db
    query = {"query": "retry with exponential backoff", "path": str(root), "base_url": sample_index.base_url}
    for _ in range(2):  # the second query vector builds the cache (BUILD_AFTER) and saves it
        onetool_code.search(mode="semantic", format="json", **query)
    saved = list((derived.cache_root() / "vectors").iterdir())
    assert len(saved) == 1 and (saved[0] / "matrix.npy").is_file()
    expected = onetool_code.search(mode="semantic", format="json", cache=False, **query)
    STORE.clear()  # a new process
    monkeypatch.setattr(cache, "build", lambda *args: pytest.fail("rebuilt although a saved cache exists"))
    monkeypatch.setattr(index, "semantic", lambda *args: pytest.fail("ChunkHound's SQL although a cache is saved"))
    answer = onetool_code.search(mode="semantic", format="json", **query)
    assert [(r["file_path"], r["start_line"]) for r in answer["results"]] == [
        (r["file_path"], r["start_line"]) for r in expected["results"]
    ]
    assert cache.info(db) is not None and cache.info(db).fresh
