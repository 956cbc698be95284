"""What ``status`` learns from the index itself: where its file is, how big and old, what it holds, who holds
it, and which snapshot answered. A lock held by ChunkHound is a fact to report, not an error: "ChunkHound is
indexing right now" is exactly what a status call is for."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onetool_code import schema
from onetool_code.errors import IndexLockedError
from onetool_code.index import database, holders, live, store
from onetool_code.index.snapshot import Snapshot
from onetool_code.reading import SMALL_FILE, read_regular


@dataclass(frozen=True)
class SnapshotInfo:
    """The snapshot that answered, and what the cache directory holds."""

    folder: Path
    created: float  # seconds since the epoch
    read_seconds: float  # how long the index file was held open to make it
    notice: str | None  # why it is not the file's current state (a writer holds the file); None: it is
    cache_dir: Path  # the folder of every snapshot
    cache_bytes: int  # what every snapshot there holds
    delta_chunks: int = 0  # chunks read as a delta against the last base (0: read whole)
    copy_seconds: float = 0.0  # how long copying the file took (0: read in place, no writer held it)
    refreshing: float | None = None  # when this process's background refresh started, if one is running


@dataclass(frozen=True)
class Facts:
    """One index's facts, read from the snapshot a search would answer from (``report.StatusReport`` adds the
    settings a search would use)."""

    size_bytes: int
    age_seconds: float
    indexed_root: str | None = None
    locked_by: str | None = None  # why the index could not be read (snapshots off, a writer holds it)
    held_by: tuple[int, str] | None = None  # the process holding the index read-write now: PID, program
    files: int = 0
    chunks: int = 0
    embedding_sets: tuple[database.EmbeddingSet, ...] = ()
    languages: tuple[tuple[str, int, int], ...] = ()
    notes: tuple[str, ...] = ()
    snapshot: SnapshotInfo | None = None  # None: snapshots are off (every search reads the index file)


def gather(project_root: Path, db: Path, *, cache: bool) -> Facts:
    """From the snapshot a search would answer from (or, with snapshots off, one short read-only connection).

    The snapshot answers while the file is missing (a compaction moved it, or it is gone and the snapshot is what
    is left of it), so that status says what a search would answer rather than "not indexed"."""
    uncached = store.cache_problem() if cache else None
    if not cache or uncached is not None:
        database.check_file(project_root, db)
    try:
        view = live.view(project_root, db) if cache and uncached is None else None
    except IndexLockedError as exc:
        try:
            base = _file(db, None)
        except FileNotFoundError:
            raise exc from None  # compacted for longer than a search waits, and no snapshot: the error says so
        return Facts(**base, locked_by=str(exc))
    base = _file(db, None if view is None else view.snapshot)
    holder = holders.writer(db)
    held_by = None if holder is None else (holder, holders.process_name(holder) or "another process")
    root = base["indexed_root"]
    notes = []
    if root and Path(str(root)).resolve() != project_root:
        notes.append(f"the index says it was built for {root}, not {project_root}")
    if uncached is not None:
        notes.append(uncached)
    if view is not None:
        held = view.snapshot
        info = SnapshotInfo(
            folder=held.folder,
            created=held.created,
            read_seconds=held.read_seconds,
            notice=view.notice,
            cache_dir=store.cache_root() / live.KIND,
            cache_bytes=store.disk_usage(live.KIND),
            delta_chunks=held.delta_chunks,
            copy_seconds=held.copy_seconds,
            refreshing=live.refreshing(db),
        )
        return Facts(
            **base,
            held_by=held_by,
            files=len(held.files),
            chunks=len(held.chunks),
            embedding_sets=held.embedding_sets,
            languages=held.language_counts,
            notes=tuple(notes),
            snapshot=info,
        )
    try:
        with database.connect(project_root, db) as con:
            layout = database.layout(con, db)
            files, chunks = database.totals(con)
            languages = database.language_counts(con)
    except IndexLockedError as exc:
        return Facts(**base, locked_by=str(exc))
    return Facts(
        **base,
        files=files,
        chunks=chunks,
        embedding_sets=layout.embedding_sets,
        languages=tuple(languages),
        notes=tuple(notes),
    )


def _file(db: Path, held: Snapshot | None) -> dict[str, Any]:
    """The index file's size, age and recorded root; while the file is missing, the size and age of the state the
    snapshot answering was read from."""
    try:
        stat = db.stat()
        size, mtime = stat.st_size, stat.st_mtime
    except FileNotFoundError:
        if held is None:
            raise
        size, mtime = held.signature.size, held.signature.mtime_ns / 1e9
    return {"size_bytes": size, "age_seconds": max(0.0, time.time() - mtime), "indexed_root": _indexed_root(db)}


def _indexed_root(db: Path) -> str | None:
    """The root ChunkHound recorded in its sidecar; a missing or unreadable sidecar is simply unknown."""
    sidecar = db.with_name(db.name + schema.ROOT_SIDECAR_SUFFIX)
    try:
        data = json.loads(read_regular(sidecar, SMALL_FILE))
    except (OSError, ValueError, RecursionError):
        return None
    value = data.get("indexed_root_path") if isinstance(data, dict) else None
    return str(value) if value else None
