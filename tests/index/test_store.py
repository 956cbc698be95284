"""State derived from indexes: one freshness rule, one build lock per index, one memory bound."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import onetool_code
from onetool_code.index.store import STORE, Key, Signature, Store


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
    assert STORE.builds == 2  # one snapshot per index


def test_the_least_recently_used_entry_goes_first(tmp_path):
    store = Store(budget=250)
    keys = [Key("snapshot", f"{name}.db") for name in "abc"]
    signatures = [signature_of(tmp_path, key.db_path) for key in keys]
    for key, signature in zip(keys[:2], signatures, strict=False):
        store.ensure(key, signature, lambda: Blob(100))
    assert store.fresh(keys[0], signatures[0]) == Blob(100)  # a is now the most recently used
    store.ensure(keys[2], signatures[2], lambda: Blob(100))
    assert store.fresh(keys[1], signatures[1]) is None  # b went
    assert store.fresh(keys[0], signatures[0]) == Blob(100) and store.fresh(keys[2], signatures[2]) == Blob(100)
    assert store.builds == 3


def test_a_stale_entry_is_rebuilt_and_never_served(tmp_path):
    store = Store()
    key = Key("lexical", "a.db")
    old = signature_of(tmp_path, "a.db")
    store.ensure(key, old, lambda: Blob(1))
    (tmp_path / "a.db").write_bytes(b"changed, and longer")
    new = Signature.of(tmp_path / "a.db")
    assert store.fresh(key, new) is None
    assert store.ensure(key, new, lambda: Blob(2)) == Blob(2)
    assert store.entries("lexical", Path("a.db")) == [(Blob(2), new)]


def test_building_one_index_holds_up_neither_another_index_nor_a_second_caller(tmp_path):
    store = Store()
    a, b = Key("snapshot", "a.db"), Key("snapshot", "b.db")
    sig_a, sig_b = signature_of(tmp_path, "a.db"), signature_of(tmp_path, "b.db")
    release, started = threading.Event(), threading.Event()
    built: list[str] = []

    def slow_build() -> Blob:
        started.set()
        assert release.wait(10)
        built.append("a")
        return Blob(1)

    results: dict[str, object] = {}
    first = threading.Thread(target=lambda: results.update(first=store.ensure(a, sig_a, slow_build)))
    second = threading.Thread(target=lambda: results.update(second=store.ensure(a, sig_a, slow_build)))
    first.start()
    assert started.wait(10)
    second.start()  # waits for a's build lock, then finds a's entry built
    assert store.ensure(b, sig_b, lambda: Blob(2)) == Blob(2)  # while a is still building
    release.set()
    first.join(10)
    second.join(10)
    assert results == {"first": Blob(1), "second": Blob(1)} and built == ["a"]
