"""Snapshots: everything a search needs from an index file, read once per state of the file and kept outside
the project, so that searches never hold the file ChunkHound writes.

The trap: DuckDB lets no writer in while any reader has the file open, and ChunkHound fails its run (losing the
new files) when it finds one. Several agents searching keep a reader there almost always. So a search reads a
snapshot (``.npy`` files every process maps, in the user's cache directory) and never opens the index file:

- one folder per state of the file (``derived.Signature``); a search of a state already read opens nothing;
- a changed file is read again once for the machine (a lock in the cache directory; racing processes wait and
  map what the first one wrote), only when no process holds it read-write and it has been quiet for
  ``QUIET_SECONDS`` (ChunkHound may close and reopen the file between phases of one run), and it is held only
  while its rows and vectors are read: the lexical index is derived after it is closed;
- while a writer holds the file, searches answer from the last snapshot and say so (which process, how old).

With snapshots off (the ``cache`` setting), searches read the index file as ChunkHound's own tools do.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from onetool_code import cache, index, lexical, rows
from onetool_code.derived import STORE, Key, Signature, cache_root, folder, machine_lock, publish
from onetool_code.errors import IndexLockedError, IndexUnreadableError
from onetool_code.spans import note

FORMAT = 1  # bump when what a snapshot folder holds changes
KIND = "snapshot"
# How long the index file must be unchanged (and its WAL too) before it is read: longer than ChunkHound's pause
# between closing the file and opening it again within one run.
QUIET_SECONDS = 2.0
# How long a search waits for a file that keeps changing with no writer holding it (a copy in progress) before
# reading it anyway.
PATIENCE_SECONDS = 30.0
# Folders earlier versions of onetool-code wrote to the cache directory.
_RETIRED = ("vectors", "lexical")


class Superseded(IndexUnreadableError):
    """A newer snapshot was published, and this one's folder removed, while a search was using it."""


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One state of one index file: its layout and counts, its rows, its lexical index and every vector set."""

    db_path: Path
    folder: Path  # where it is published (or would have been, when the cache directory cannot be written)
    signature: Signature
    created: float  # when it was read, seconds since the epoch
    language_counts: tuple[tuple[str, int, int], ...]
    chunks: rows.ChunkRows
    vectors: dict[index.EmbeddingSet, cache.VectorCache]  # in the layout's order
    read_seconds: float = 0.0  # how long the index file was held open to make it
    built_lexical: lexical.LexicalIndex | None = None  # when it was built here and could not be published

    @functools.cached_property
    def lexical_index(self) -> lexical.LexicalIndex:
        """Loaded at the first search that needs it: its vocabulary is the one part a load must parse (0.1 s at
        85,535 chunks), and ``status`` and semantic searches do without it. Everything else is mapped when the
        snapshot is loaded, and a mapping outlives the file's removal; this load does not."""
        if self.built_lexical is not None:
            return self.built_lexical
        try:
            return lexical.load(self.folder / "lexical", self.chunks)
        except OSError as exc:
            raise Superseded(f"the index {self.db_path} changed twice while this search ran; search again") from exc

    @property
    def nbytes(self) -> int:
        held = self.chunks.nbytes + sum(v.nbytes for v in self.vectors.values())
        if "lexical_index" in self.__dict__:
            held += self.lexical_index.nbytes - self.chunks.attributes.nbytes  # the attributes are the rows'
        return held

    @property
    def embedding_sets(self) -> tuple[index.EmbeddingSet, ...]:
        return tuple(self.vectors)

    @property
    def files(self) -> int:
        return len(self.chunks.attributes.paths)

    @property
    def layout(self) -> index.Layout:
        return index.Layout(self.db_path, self.embedding_sets)

    def save(self, into: Path) -> None:
        meta = {
            "db_path": str(self.db_path),
            "signature": asdict(self.signature),
            "created": self.created,
            "read_seconds": self.read_seconds,
            "embedding_sets": [asdict(s) for s in self.embedding_sets],
            "language_counts": self.language_counts,
        }
        for name in ("rows", "lexical", *(f"vectors-{i}" for i in range(len(self.embedding_sets)))):
            (into / name).mkdir()
        self.chunks.save(into / "rows")
        lexical.save(self.lexical_index, into / "lexical")
        for i, embedding_set in enumerate(self.embedding_sets):
            self.vectors[embedding_set].save(into / f"vectors-{i}")
        (into / "snapshot.json").write_text(json.dumps(meta), encoding="utf-8")  # last: a folder without it is torn


@dataclass(frozen=True)
class View:
    """The snapshot a search answers from, and a one-line notice when it is not the file's current state."""

    snapshot: Snapshot
    notice: str | None = None


def view(project_root: Path, db_path: Path) -> View:
    """The snapshot of the file's current state (mapped, read now, or waited for), or the last one with a notice
    while a writer holds the file; the "in use" error when there is none."""
    index.check_file(project_root, db_path)
    key = Key(KIND, str(db_path))
    current = _current(key, db_path)
    if current is not None:
        return View(current)
    with machine_lock(key):
        deadline = time.monotonic() + PATIENCE_SECONDS
        while True:
            current = _current(key, db_path)
            if current is not None:
                return View(current)
            holder = index.writer(db_path)
            if holder is None:
                settle = Signature.of(db_path).changed + QUIET_SECONDS - time.time()
                if settle > 0 and time.monotonic() < deadline:
                    time.sleep(min(settle, 0.2))  # look again soon: a writer may take the file meanwhile
                    continue
                try:
                    return View(_read(project_root, db_path, key))
                except IndexLockedError:
                    holder = index.writer(db_path)
                    if holder is None:
                        raise
            last = _last(key, db_path)
            if last is None:
                raise index.locked(db_path, str(holder), _process_name(holder))
            return View(last, _stale_notice(holder, last))


def _current(key: Key, db_path: Path) -> Snapshot | None:
    """The snapshot of the file's state now: held by this process, or mapped from the cache directory."""
    signature = Signature.of(db_path)
    held = STORE.fresh(key, signature)
    if held is not None:
        return held
    loaded = _load(folder(key, signature, FORMAT), db_path)
    if loaded is not None:
        STORE.put(key, signature, loaded)
    return loaded


def _last(key: Key, db_path: Path) -> Snapshot | None:
    """The newest snapshot of any earlier state of the file: held by this process, or on disk."""
    held = [snapshot for snapshot, _ in STORE.entries(KIND, db_path)]
    known = {snapshot.folder for snapshot in held}
    target = folder(key, Signature.of(db_path), FORMAT)
    on_disk = target.parent.glob(f"{target.name.split('-')[0]}-*")
    found = [_load(f, db_path) for f in on_disk if ".tmp-" not in f.name and f not in known]
    candidates = held + [s for s in found if s is not None]
    return max(candidates, key=lambda s: s.created) if candidates else None


def _read(project_root: Path, db_path: Path, key: Key) -> Snapshot:
    """Read the file once (held only while its rows and vectors are read), derive the rest, publish it."""
    started = time.perf_counter()
    with index.connect(project_root, db_path) as con:
        signature = Signature.of(db_path)  # the connection's lock keeps writers out: this is the state read
        layout = index.layout(con, db_path)
        files = index.file_rows(con)
        chunk_rows = index.chunk_rows(con)
        vectors = {s: cache.build(con, db_path, s, files) for s in layout.embedding_sets}
    held = time.perf_counter() - started
    chunks = rows.build(files, chunk_rows)
    del chunk_rows
    target = folder(key, signature, FORMAT)
    made = Snapshot(
        db_path=db_path,
        folder=target,
        signature=signature,
        created=time.time(),
        language_counts=rows.language_counts(files),
        chunks=chunks,
        vectors=vectors,
        read_seconds=held,
        built_lexical=lexical.build(chunks),
    )
    if publish(target, made.save):
        made = _load(target, db_path) or made  # mapped: the pages are shared, the heap copies go
    _prune()
    STORE.put(key, signature, made)
    STORE.builds += 1
    note(f"snapshot of {db_path} made: the file held {held:.2f} s, {time.perf_counter() - started:.2f} s in all")
    return made


def _load(target: Path, db_path: Path) -> Snapshot | None:
    """A published snapshot, its arrays memory-mapped; None when there is none (or it is torn or foreign)."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        meta = json.loads((target / "snapshot.json").read_text(encoding="utf-8"))
        if meta["db_path"] != str(db_path):
            return None
        chunks = rows.ChunkRows.load(target / "rows")
        sets = tuple(index.EmbeddingSet(**s) for s in meta["embedding_sets"])
        return Snapshot(
            db_path=db_path,
            folder=target,
            signature=Signature(**{k: tuple(v) if k == "wal" and v else v for k, v in meta["signature"].items()}),
            created=float(meta["created"]),
            language_counts=tuple(tuple(c) for c in meta["language_counts"]),  # type: ignore[misc]
            chunks=chunks,
            vectors={s: cache.load(target / f"vectors-{i}", db_path) for i, s in enumerate(sets)},
            read_seconds=float(meta["read_seconds"]),
        )
    return None


def _prune() -> None:
    """Remove the snapshots of index files that no longer exist, and what earlier versions left behind."""
    root = cache_root()
    for retired in _RETIRED:
        shutil.rmtree(root / retired, ignore_errors=True)
    for meta in (root / KIND).glob("*/snapshot.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if not Path(json.loads(meta.read_text(encoding="utf-8"))["db_path"]).exists():
                shutil.rmtree(meta.parent, ignore_errors=True)


def _process_name(pid: int | None) -> str:
    """The writer's program name (``/proc/PID/comm``), when the system says it."""
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _stale_notice(pid: int | None, last: Snapshot) -> str:
    name = _process_name(pid)
    who = "ChunkHound" if "chunkhound" in name.lower() else (name or "another process")
    return (
        f"the index is being updated by {who} (PID {pid}); this answer is from the snapshot of "
        f"{time.strftime('%H:%M:%S', time.localtime(last.created))} ({_age(time.time() - last.created)} old)"
    )


def _age(seconds: float) -> str:
    """``12 s``, ``4 min``, ``3 h``, ``2 days``."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
