"""What a process derives from an index file (the vector cache, the lexical index), kept in one place.

One freshness rule: an entry belongs to one state of the file (``Signature``: size, mtime, inode, the WAL
beside it), and any other state makes it stale. One build lock per index file, taken outside the store's own
brief lock, so that building one index never holds up a search of another. One memory bound over all
entries: the least recently used go first, and an evicted entry must earn its rebuild again (its demand count
starts over), so a process alternating between indexes that fit keeps them all, and one that cannot fit them
does not rebuild at every switch.

Entries never hold a DuckDB connection: ``build`` borrows the caller's short read-only one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

CACHE_ENV = "ONETOOL_CODE_CACHE_DIR"
# DuckDB writes uncommitted changes to ``<file>.wal``; a WAL left beside the file changes what a reader sees.
WAL_SUFFIX = ".wal"
# Demand is counted for at most this many keys; past that the counts start over (a process that touched so
# many indexes is not going to miss one count).
MAX_DEMAND_KEYS = 64


def _default_budget() -> int:
    """A quarter of the machine's memory: derived state is a cache, never the reason a host runs out."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError, AttributeError):
        return 2 << 30


@dataclass(frozen=True)
class Signature:
    """What identifies one state of the index file: any write by ChunkHound changes one of these."""

    size: int
    mtime_ns: int
    ctime_ns: int  # a copy put back with its size and mtime kept still changes this
    inode: int
    device: int
    wal: tuple[int, int] | None

    @classmethod
    def of(cls, db_path: Path) -> Signature:
        stat = db_path.stat()
        try:
            wal_stat = db_path.with_name(db_path.name + WAL_SUFFIX).stat()
            wal: tuple[int, int] | None = (wal_stat.st_size, wal_stat.st_mtime_ns)
        except FileNotFoundError:
            wal = None
        return cls(stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev, wal)


@dataclass(frozen=True)
class Key:
    """One kind of derived state (``"vectors"``, ``"lexical"``) of one index file, with what else tells
    entries of that kind apart (a provider and model)."""

    kind: str
    db_path: str
    detail: tuple[str, ...] = ()


class Sized(Protocol):
    @property
    def nbytes(self) -> int: ...


T = TypeVar("T", bound=Sized)


@dataclass
class _Entry:
    value: Any
    signature: Signature


class Store:
    def __init__(self, budget: int | None = None) -> None:
        self.budget = _default_budget() if budget is None else budget
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._demand: dict[Key, int] = {}
        self._build_locks: dict[str, threading.Lock] = {}
        self.builds = 0  # how many entries this store has built: what a thrash would show

    def fresh(self, key: Key, signature: Signature) -> Any | None:
        """The entry of this state of the file, if the process holds it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.signature != signature:
                return None
            self._entries.move_to_end(key)
            return entry.value

    def ensure(
        self, key: Key, signature: Signature, build: Callable[[], T], *, demand: int, threshold: int
    ) -> T | None:
        """The fresh entry; or a new one from ``build`` once ``demand`` (added up over calls) reaches
        ``threshold``; or None: not worth building yet, the caller answers another way."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.signature == signature:
                self._entries.move_to_end(key)
                return entry.value
            if len(self._demand) >= MAX_DEMAND_KEYS and key not in self._demand:
                self._demand.clear()
            self._demand[key] = self._demand.get(key, 0) + demand
            if self._demand[key] < threshold:
                return None
            build_lock = self._build_locks.setdefault(key.db_path, threading.Lock())
        with build_lock:
            with self._lock:  # another thread may have built it while this one waited for the build lock
                entry = self._entries.get(key)
                if entry is not None and entry.signature == signature:
                    return entry.value
                self._entries.pop(key, None)  # the stale one goes first: two never exist at once
            value = build()
            with self._lock:
                self._entries[key] = _Entry(value, signature)
                self.builds += 1
                self._evict(keep=key)
            return value

    def discard(self, key: Key) -> None:
        """Drop an entry found to describe another state of its file than its signature says."""
        with self._lock:
            self._entries.pop(key, None)

    def entries(self, kind: str, db_path: Path) -> list[tuple[Any, Signature]]:
        """Every entry of one kind for one index file, most recently used first."""
        with self._lock:
            return [
                (e.value, e.signature)
                for k, e in reversed(self._entries.items())
                if k.kind == kind and k.db_path == str(db_path)
            ]

    def nbytes(self) -> int:
        with self._lock:
            return sum(e.value.nbytes for e in self._entries.values())

    def clear(self) -> None:
        """Forget everything (memory back to the host; tests start cold)."""
        with self._lock:
            self._entries.clear()
            self._demand.clear()
            self.builds = 0

    def _evict(self, keep: Key) -> None:
        total = sum(e.value.nbytes for e in self._entries.values())
        for key in list(self._entries):
            if total <= self.budget:
                return
            if key != keep:
                total -= self._entries.pop(key).value.nbytes
                self._demand.pop(key, None)


STORE = Store()


# -- The cache directory: derived state written once, memory-mapped by every later process ------------------


def cache_root() -> Path:
    """``$ONETOOL_CODE_CACHE_DIR``, else ``$XDG_CACHE_HOME/onetool-code``, else ``~/.cache/onetool-code``;
    never inside the project."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "onetool-code"


def folder(key: Key, signature: Signature, version: int) -> Path:
    """``<kind>/<index file and detail>-<its state>``: one folder per state of the file, and the folders of the
    file's earlier states findable by their first part."""
    place = hashlib.sha256(repr((str(Path(key.db_path).resolve()), key.detail)).encode()).hexdigest()[:16]
    state = hashlib.sha256(repr((version, signature)).encode()).hexdigest()[:16]
    return cache_root() / key.kind / f"{place}-{state}"


def publish(target: Path, write: Callable[[Path], None]) -> None:
    """``write`` into a private folder, then rename it into place (a reader never sees half a folder), and
    remove the folders of the file's earlier states. A cache that cannot be written only slows the next process."""
    temporary = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        temporary.mkdir(parents=True)
        write(temporary)
        place = target.name.split("-")[0]
        for earlier in target.parent.glob(f"{place}-*"):
            if earlier.name != target.name and ".tmp-" not in earlier.name:
                shutil.rmtree(earlier, ignore_errors=True)
        temporary.rename(target)
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)
