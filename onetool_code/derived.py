"""What a process derives from index files, kept in one place: the snapshots it maps, and (with snapshots
off) the lexical indexes it builds in memory.

One freshness rule: an entry belongs to one state of the file (``Signature``: size, mtime, ctime, inode, the
WAL beside it), and any other state makes it stale. One build lock per index file, taken outside the store's
own brief lock, so that building one index never holds up a search of another. One memory bound over all
entries: the least recently used go first. Memory-mapped arrays are the page cache's, shared by every process,
so entries count only what they hold on the heap.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from onetool_code.spans import note

CACHE_ENV = "ONETOOL_CODE_CACHE_DIR"
# DuckDB writes uncommitted changes to ``<file>.wal``; a WAL left beside the file changes what a reader sees.
WAL_SUFFIX = ".wal"


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

    @property
    def changed(self) -> float:
        """When the file or its WAL was last written, in seconds since the epoch (a writer moves the mtime; the
        ctime also moves when a file is only renamed or its times are set)."""
        return max(self.mtime_ns, self.wal[1] if self.wal else 0) / 1e9


@dataclass(frozen=True)
class Key:
    """One kind of derived state (``"snapshot"``, ``"lexical"``) of one index file."""

    kind: str
    db_path: str


def heap(*arrays: np.ndarray) -> int:
    """Bytes of these arrays on this process's heap: a memory-mapped array's pages are the page cache's."""
    return sum(0 if isinstance(a, np.memmap) else a.nbytes for a in arrays)


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

    def ensure(self, key: Key, signature: Signature, build: Callable[[], T]) -> T:
        """The fresh entry, or a new one from ``build`` (one build per index file at a time)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.signature == signature:
                self._entries.move_to_end(key)
                return entry.value
            build_lock = self._build_locks.setdefault(key.db_path, threading.Lock())
        with build_lock:
            with self._lock:  # another thread may have built it while this one waited for the build lock
                entry = self._entries.get(key)
                if entry is not None and entry.signature == signature:
                    return entry.value
                self._entries.pop(key, None)  # the stale one goes first: two never exist at once
            value = build()
            self.put(key, signature, value)
            self.builds += 1
            return value

    def put(self, key: Key, signature: Signature, value: Sized) -> None:
        with self._lock:
            self._entries[key] = _Entry(value, signature)
            self._evict(keep=key)

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
            self.builds = 0

    def _evict(self, keep: Key) -> None:
        total = sum(e.value.nbytes for e in self._entries.values())
        for key in list(self._entries):
            if total <= self.budget:
                return
            if key != keep:
                total -= self._entries.pop(key).value.nbytes


STORE = Store()


# -- The cache directory: derived state written once, memory-mapped by every later process ------------------


def cache_root() -> Path:
    """``$ONETOOL_CODE_CACHE_DIR``, else ``$XDG_CACHE_HOME/onetool-code``, else ``~/.cache/onetool-code``;
    never inside the project."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "onetool-code"


def place(key: Key) -> str:
    """The name every state of one index file's derived state starts with."""
    return hashlib.sha256(str(Path(key.db_path).resolve()).encode()).hexdigest()[:16]


def folder(key: Key, signature: Signature, version: int) -> Path:
    """``<kind>/<index file>-<its state>``: one folder per state of the file, and the folders of the file's
    earlier states findable by their first part."""
    state = hashlib.sha256(repr((version, signature)).encode()).hexdigest()[:16]
    return cache_root() / key.kind / f"{place(key)}-{state}"


@contextmanager
def machine_lock(key: Key) -> Iterator[None]:
    """One holder on the whole machine at a time (``flock`` on a file in the cache directory; the kernel drops
    it if the holder dies), and one thread of this process: flock does not tell a process's threads apart."""
    locks = cache_root() / "locks"
    with _THREAD_LOCKS.setdefault(str(key), threading.Lock()):
        try:
            locks.mkdir(parents=True, exist_ok=True)
            fd = os.open(locks / f"{key.kind}-{place(key)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:  # no cache directory to share: this process works alone
            note(f"no machine lock in {locks}: {exc}")
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


_THREAD_LOCKS: dict[str, threading.Lock] = {}


def disk_usage(kind: str) -> int:
    """Bytes held by one kind of derived state in the cache directory (other tools may share the directory)."""
    root = cache_root() / kind
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def publish(target: Path, write: Callable[[Path], None], keep: Path | None = None) -> bool:
    """``write`` into a private folder, then rename it into place (a reader never sees half a folder), and
    remove the folders of the file's earlier states but ``keep`` (the base a delta snapshot joins). A cache that
    cannot be written only slows the next search: False says so."""
    temporary = target.with_name(f"{target.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        temporary.mkdir(parents=True)
        write(temporary)
        first = target.name.split("-")[0]
        for earlier in target.parent.glob(f"{first}-*"):
            if earlier.name != target.name and earlier != keep and ".tmp-" not in earlier.name:
                shutil.rmtree(earlier, ignore_errors=True)
        temporary.rename(target)
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)
        return False
    return True
