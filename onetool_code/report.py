"""What ``status`` knows about an index: where, how big, how old, what it holds, and whether it is in use."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onetool_code import derived, index, live, schema
from onetool_code.errors import IndexLockedError, ModelNotInIndexError
from onetool_code.reading import SMALL_FILE, read_regular
from onetool_code.settings import Settings


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
class StatusReport:
    project_root: Path
    db_path: Path
    size_bytes: int
    age_seconds: float
    provider: str
    model: str
    reranker: str = "none"  # how hybrid searches are reranked (``settings.Reranker.describe``)
    locked_by: str | None = None  # why the index could not be read (snapshots off, a writer holds it)
    held_by: tuple[int, str] | None = None  # the process holding the index read-write now: PID, program
    indexed_root: str | None = None
    files: int = 0
    chunks: int = 0
    embedding_sets: tuple[index.EmbeddingSet, ...] = ()
    languages: tuple[tuple[str, int, int], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    snapshot: SnapshotInfo | None = None  # None: snapshots are off (every search reads the index file)

    model_present: bool = False
    model_chosen_by: str | None = None  # the index named the model (its record, or its largest set), not the user


def gather(settings: Settings) -> StatusReport:
    """From the snapshot a search would answer from (or, with snapshots off, one short read-only connection).
    A lock held by ChunkHound is reported, not raised: "ChunkHound is indexing right now" is exactly what a status
    call is for."""
    db = settings.db_path
    index.check_file(settings.project_root, db)
    stat = db.stat()
    base = {
        "project_root": settings.project_root,
        "db_path": db,
        "size_bytes": stat.st_size,
        "age_seconds": max(0.0, time.time() - stat.st_mtime),
        "provider": settings.provider,
        "model": settings.model,
        "reranker": settings.reranker.describe() if settings.reranker else "none",
        "indexed_root": _indexed_root(db),
    }
    holder = index.writer(db)
    held_by = None if holder is None else (holder, index.process_name(holder) or "another process")
    root = base["indexed_root"]
    notes = []
    if root and Path(str(root)).resolve() != settings.project_root:
        notes.append(f"the index says it was built for {root}, not {settings.project_root}")
    uncached = derived.cache_problem() if settings.cache else None
    if uncached is not None:
        notes.append(uncached)
    try:
        if settings.cache and uncached is None:
            view = live.view(settings.project_root, db)
            held = view.snapshot
            info = SnapshotInfo(
                folder=held.folder,
                created=held.created,
                read_seconds=held.read_seconds,
                notice=view.notice,
                cache_dir=derived.cache_root() / live.KIND,
                cache_bytes=derived.disk_usage(live.KIND),
                delta_chunks=held.delta_chunks,
                copy_seconds=held.copy_seconds,
                refreshing=live.refreshing(db),
            )
            return StatusReport(
                **base | _model(settings, db, held.embedding_sets),
                held_by=held_by,
                files=len(held.files),
                chunks=len(held.chunks),
                embedding_sets=held.embedding_sets,
                languages=held.language_counts,
                notes=tuple(notes),
                snapshot=info,
            )
        with index.connect(settings.project_root, db) as con:
            layout = index.layout(con, db)
            files, chunks = index.totals(con)
            languages = index.language_counts(con)
    except IndexLockedError as exc:
        return StatusReport(**base, locked_by=str(exc))
    return StatusReport(
        **base | _model(settings, db, layout.embedding_sets),
        files=files,
        chunks=chunks,
        embedding_sets=layout.embedding_sets,
        languages=tuple(languages),
        notes=tuple(notes),
    )


def _model(settings: Settings, db: Path, sets: tuple[index.EmbeddingSet, ...]) -> dict[str, Any]:
    """The model a semantic search would compare with, by the search's own rule, and what chose it."""
    try:
        chosen = index.embedding_set(index.Layout(db, sets), settings)
    except ModelNotInIndexError:
        return {"model_present": False}
    by = None
    if settings.committed is not None:
        by = f"the index's record {settings.committed.path.name}"
    elif settings.model_from_index and chosen.model != settings.model:
        by = "the index's largest vector set"
    return {"model": chosen.model, "model_present": True, "model_chosen_by": by}


def _indexed_root(db: Path) -> str | None:
    """The root ChunkHound recorded in its sidecar; a missing or unreadable sidecar is simply unknown."""
    sidecar = db.with_name(db.name + schema.ROOT_SIDECAR_SUFFIX)
    try:
        data = json.loads(read_regular(sidecar, SMALL_FILE))
    except (OSError, ValueError, RecursionError):
        return None
    value = data.get("indexed_root_path") if isinstance(data, dict) else None
    return str(value) if value else None
