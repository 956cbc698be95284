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
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG
from typing import Any, Protocol, TypeVar

import numpy as np

from onetool_code.schema import WAL_SUFFIX
from onetool_code.settings import CACHE_ENV, cache_root
from onetool_code.spans import note


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

    @classmethod
    def recorded(cls, record: dict[str, Any]) -> Signature:
        """A signature as a snapshot's record (JSON) keeps it."""
        return cls(**{k: tuple(v) if k == "wal" and v else v for k, v in record.items()})

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

    def discard(self, key: Key) -> None:
        """Forget one entry (it turned out damaged)."""
        with self._lock:
            self._entries.pop(key, None)

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


# -- The cache directory (``settings.cache_root``): derived state written once, memory-mapped by every later
# process. The folders of the cache directory: snapshots, private copies of held indexes, and the machine's locks.
SUBFOLDERS = ("snapshot", "copies", "locks")


def cache_problem() -> str | None:
    """Why the cache directory must not be used, or None once it and its folders exist, only ours.

    Snapshots hold the project's code, and searches believe what they hold: a cache folder another user owns or
    can write to would let them read a private project's code or make searches show theirs. So the cache is
    private to its owner: its folders ``0700`` (made so, or tightened when they are ours), its files ``0600``.
    """
    root = cache_root()
    for path in (root, *(root / name for name in SUBFOLDERS)):
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            found = path.stat()
        except OSError:
            # No cache can be written there (a file in the way, a read-only disk): snapshots are made and held
            # in memory only (``publish`` says so), which trusts no one else's files either.
            return None
        if found.st_uid != os.geteuid() or path.lstat().st_uid != os.geteuid():
            return _refused(path, "another user owns it")
        if found.st_mode & 0o022:
            return _refused(path, "other users can write to it")
        if path != root and found.st_mode & 0o077:
            path.chmod(0o700)
    return None


def _refused(path: Path, why: str) -> str:
    return (
        f"the cache folder {path} is not used: {why}, so answers read the index itself. Set {CACHE_ENV} to a "
        "folder of your own that only you can write to."
    )


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
            locks.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    """Bytes held by one kind of derived state in the cache directory (other tools may share the directory).

    Other processes publish and remove folders there meanwhile: a folder or file gone before it is looked at held
    nothing (``os.walk`` passes over a folder it cannot list)."""
    total = 0
    for folder, _, names in os.walk(cache_root() / kind):
        for name in names:
            with suppress(FileNotFoundError):
                found = (Path(folder) / name).stat()
                total += found.st_size if S_ISREG(found.st_mode) else 0
    return total


def publish(target: Path, write: Callable[[Path], None], keep: Path | None = None) -> bool:
    """``write`` into a private folder, then rename it into place (a reader never sees half a folder), and
    remove the folders of the file's earlier states but ``keep`` (the base a delta snapshot joins), and those
    that writers killed while writing left. A cache that cannot be written only slows the next search: False
    says so.

    What is published is on disk first (every file and folder flushed, then the rename, then the parent): after a
    crash or a power cut a published folder is whole. A folder already at ``target`` did not load (it is only
    ever published once per state, under the machine lock), so it is set aside.
    """
    temporary = target.with_name(f"{target.name}{_PRIVATE}{os.getpid()}-{threading.get_ident()}")
    try:
        _remove_dead_writers(target.parent)
        temporary.mkdir(mode=0o700, parents=True)
        write(temporary)
        _private_and_flushed(temporary)
        first = target.name.split("-")[0]
        for earlier in target.parent.glob(f"{first}-*"):
            if earlier.name != target.name and earlier != keep and _PRIVATE not in earlier.name:
                set_aside(earlier)
        if target.exists():
            set_aside(target)
        temporary.rename(target)
        _flush(target.parent)
    except OSError:
        shutil.rmtree(temporary, ignore_errors=True)
        return False
    return True


_PRIVATE = ".tmp-"  # ``<name>.tmp-PID-THREAD``: a folder being written, or being removed
SPILL = "-spill"  # ``<name>-spill.tmp-PID-THREAD``: the arrays of a snapshot being read (``spill.py``)


def spill_folder(target: Path) -> Path:
    """Where the first read of ``target`` writes its large arrays as it reads them: private to this thread."""
    return target.with_name(f"{target.name}{SPILL}{_PRIVATE}{os.getpid()}-{threading.get_ident()}")


def set_aside(published: Path) -> None:
    """Take a published folder out of readers' sight at once (a rename), then remove it. A process that maps
    its files keeps them until it lets go."""
    aside = published.with_name(f"{published.name}{_PRIVATE}{os.getpid()}-{threading.get_ident()}")
    try:
        published.rename(aside)
    except OSError:
        return  # gone already: another process set it aside
    shutil.rmtree(aside, ignore_errors=True)


def dead(pid: str) -> bool:
    """Whether the process of this number has ended (the number is read from a folder's name)."""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists, as another user's
    return False


def _remove_dead_writers(parent: Path) -> None:
    """Private folders of processes that were killed while they wrote (a snapshot of 28,766 chunks is 200 MB)."""
    for left in parent.glob(f"*{_PRIVATE}*") if parent.is_dir() else ():
        if dead(left.name.rpartition(_PRIVATE)[2].split("-")[0]):
            shutil.rmtree(left, ignore_errors=True)


def _private_and_flushed(folder: Path) -> None:
    """Every file ``0600`` and folder ``0700``, each flushed to disk, the deepest first."""
    for path in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        path.chmod(0o700 if path.is_dir() else 0o600)
        _flush(path)
    _flush(folder)


def _flush(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
