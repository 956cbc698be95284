"""The checkout over its index: the files changed, new and deleted since indexing (``project.drift``) laid over
the snapshot a search reads, so that the agent's own edits and branch answer at once, without an indexer.

An overlay is a delta snapshot made in memory, as a refresh makes one from the index file (``snapshot.py``): the
rows of every changed or deleted file are masked dead, and the changed and new files' chunks (cut by our chunker
as ChunkHound cuts them) join after the base's rows, so every ranking (words, definitions, regex, the chunks
holding a line, the files ``usages`` reads) sees them at once, with the whole index's word statistics. Their
vectors are not the index's: the semantic ranking sees only the masking, and the notice says so.

Kept per index and state: the check that nothing changed is the drift's stat pass; an overlay is made again only
when the drift or the snapshot changes. Past ``MAX_FILES`` files the search answers from the index as it was, and
the notice says how far the checkout is and that re-indexing would help.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from onetool_code import published
from onetool_code.hits import FileRow
from onetool_code.index import quantised, rows, vector_cache
from onetool_code.index.attributes import Attributes
from onetool_code.index.database import EmbeddingSet
from onetool_code.index.snapshot import Snapshot, same_set
from onetool_code.index.store import cache_root
from onetool_code.project.chunker import chunk_file
from onetool_code.project.drift import Checkout, Drift, drift, state_of
from onetool_code.project.walk import read_file
from onetool_code.schema import EMBEDDING_SIDECAR_SUFFIX, ROOT_SIDECAR_SUFFIX

# Past this many files changed, new and deleted, the overlay would cost more than a search should (each file is
# read and chunked at each change): the search answers as indexed and says so.
MAX_FILES = 500


@dataclass(frozen=True)
class Facts:
    """What ``status`` says of the checkout: the drift, and what answers for those files."""

    drift: Drift
    answers: str


@dataclass(frozen=True)
class Laid:
    """A snapshot with the checkout laid over it: what the answer says of it, and the overlay's own chunks
    (id, code), whose vectors the index does not hold (``with_vectors``)."""

    snapshot: Snapshot
    notice: str | None = None
    chunks: tuple[tuple[int, str], ...] = ()

    def unembedded(self, embedding_set: EmbeddingSet) -> tuple[tuple[int, str], ...]:
        """The overlay's chunks that have no vector of this model yet."""
        if not self.chunks or embedding_set not in self.snapshot.vectors:
            return ()
        held = self.snapshot.vectors[embedding_set].chunk_ids
        ids = np.fromiter((chunk_id for chunk_id, _ in self.chunks), np.int64, len(self.chunks))
        missing = ~np.isin(ids, held)
        return tuple(chunk for chunk, lacking in zip(self.chunks, missing, strict=True) if lacking)


@dataclass
class _Held:
    snapshot: Snapshot  # the snapshot the overlay was laid over
    drift: Drift
    laid: Laid


_checkouts: dict[tuple[Path, Path], Checkout] = {}
_held: dict[Path, _Held] = {}
# Per index: the overlay's files cut into pieces (type, symbol, code, start, end) by language and content hash.
Piece = tuple[str, str, str, int, int]
_cut: dict[Path, dict[tuple[str, str], tuple[Piece, ...]]] = {}
_lock = threading.Lock()


def reset() -> None:
    """No checkout kept, no overlay held (for tests)."""
    with _lock:
        for kept in _checkouts.values():
            kept.close()
        _checkouts.clear()
        _held.clear()
        _cut.clear()


def checkout(project_root: Path, db_path: Path) -> Checkout | None:
    """The kept walk of the project's checkout; None for a published index fetched without one."""
    if published.fetched(project_root, cache_root()) is not None:
        return None
    key = (project_root, db_path)
    with _lock:
        if key not in _checkouts:
            sidecars = (db_path.name + suffix for suffix in ("", ".wal", ROOT_SIDECAR_SUFFIX, EMBEDDING_SIDECAR_SUFFIX))
            _checkouts[key] = Checkout(project_root, frozenset(db_path.with_name(name) for name in sidecars))
        return _checkouts[key]


def facts(project_root: Path, db_path: Path, files: Sequence[FileRow], *, laid: bool) -> Facts | None:
    """How the checkout differs from ``files`` (the index's rows) and what answers for it; ``laid``: whether
    searches lay the checkout over the index (snapshots on)."""
    found = checkout(project_root, db_path)
    if found is None:
        return None
    moved = drift(found, files)
    if not moved.checkout:
        return None
    if not moved.files:
        return Facts(moved, "the index (as indexed)")
    if not laid:
        return Facts(moved, "the index as it was (snapshots off: the checkout is not laid over it)")
    if moved.files > MAX_FILES:
        return Facts(moved, f"the index as it was (past {MAX_FILES:,} files): re-indexing would help")
    return Facts(moved, "the checkout: the files as they are now, by words, names and regex")


def laid(project_root: Path, db_path: Path, snapshot: Snapshot) -> Laid:
    """The snapshot with the checkout laid over it, and what the answer should say of it."""
    found = checkout(project_root, db_path)
    if found is None:
        return Laid(snapshot)
    moved = drift(found, snapshot.files)
    if not moved.files or not moved.checkout:
        return Laid(snapshot)
    if moved.files > MAX_FILES:
        return Laid(snapshot, _far(moved))
    with _lock:
        held = _held.get(db_path)
        if held is not None and held.snapshot is snapshot and held.drift == moved:
            return held.laid
    overlaid, own = _overlaid(snapshot, moved, found)
    made = Laid(overlaid, f"{_counts(moved)} since indexing: searched as they are now", own)
    with _lock:
        _held[db_path] = _Held(snapshot, moved, made)
    return made


def with_vectors(
    db_path: Path, laid: Laid, embedding_set: EmbeddingSet, chunk_ids: Sequence[int], matrix: np.ndarray
) -> Laid:
    """``laid`` with these overlay chunks' vectors of one model (rows of ``matrix``, in the index's model): the
    semantic ranking then meets them as the index's own. Kept for the next search of the same overlay."""
    snapshot = laid.snapshot
    held = snapshot.vectors[embedding_set]
    made = dataclasses.replace(
        laid,
        snapshot=dataclasses.replace(
            snapshot,
            vectors={**snapshot.vectors, embedding_set: _appended(held, snapshot, chunk_ids, matrix)},
        ),
    )
    with _lock:
        kept = _held.get(db_path)
        if kept is not None and kept.laid is laid:
            kept.laid = made
    return made


def _far(moved: Drift) -> str:
    return (
        f"the checkout is {_counts(moved)} since indexing, past the {MAX_FILES:,} files searched as they are now: "
        "answers are from the index as it was; re-indexing would help (chunkhound index)"
    )


def _counts(moved: Drift) -> str:
    return f"{len(moved.changed):,} files changed, {len(moved.new):,} new, {len(moved.deleted):,} deleted"


def _overlaid(snapshot: Snapshot, moved: Drift, found: Checkout) -> tuple[Snapshot, tuple[tuple[int, str], ...]]:
    """``snapshot`` with the drift's files as they are now: a delta over its base (its own delta, if any, kept);
    and the overlay's own chunks (id, code)."""
    base = snapshot.base or snapshot
    gone = set(moved.changed) | set(moved.deleted)
    files = _files(snapshot.files, moved, found)
    ids = {f.path: f.file_id for f in files}
    kept = _rows_of(snapshot.delta, gone, ids) if snapshot.delta is not None else []
    next_id = int(np.max(snapshot.chunks.chunk_ids, initial=0)) + 1
    with _lock:
        cut = _cut.setdefault(snapshot.db_path, {})
    added = _chunked(moved, ids, next_id, cut)
    delta = rows.build(files, kept + added)
    alive = _alive_base(snapshot, base, gone)
    chunks = base.chunks.joined(alive, delta, files)
    vectors = {s: _vectors(snapshot, base, s, gone, files) for s in snapshot.embedding_sets}
    overlaid = dataclasses.replace(
        snapshot,
        files=tuple(files),
        chunks=chunks,
        vectors=vectors,
        language_counts=rows.language_counts(files),
        built_lexical=base.lexical_index.joined(delta, chunks.attributes, chunks.chunk_ids),
        base=base,
        delta=delta,
    )
    return overlaid, tuple((row[0], row[4]) for row in added)


def _files(indexed: Sequence[FileRow], moved: Drift, found: Checkout) -> list[FileRow]:
    """The index's file rows as ChunkHound would write them now, in path order (DuckDB's: by code point)."""
    deleted = set(moved.deleted)
    now = {s.rel: s for s in moved.now}
    files = []
    for row in indexed:
        if row.path in deleted:
            continue
        source = now.get(row.path)
        files.append(row if source is None else dataclasses.replace(row, state=state_of(source, found.digest(source))))
    next_id = max((f.file_id for f in indexed), default=0) + 1
    for offset, rel in enumerate(moved.new):
        source = now[rel]
        files.append(
            FileRow(next_id + offset, rel, rel.lower(), source.language, 0, state_of(source, found.digest(source)))
        )
    files.sort(key=lambda f: f.path)
    return files


def _chunked(
    moved: Drift, ids: dict[str, int], next_id: int, cut: dict[tuple[str, str], tuple[Piece, ...]]
) -> list[tuple[Any, ...]]:
    """The changed and new files' chunks as ``database.chunk_rows`` gives rows, numbered from ``next_id``.

    ``cut``: the pieces of the files of the overlay made before, by language and content hash; a save in a
    50-file overlay cuts one file again, not 50. Left holding this overlay's files alone."""
    added: list[tuple[Any, ...]] = []
    kept: dict[tuple[str, str], tuple[Piece, ...]] = {}
    for source in moved.now:
        data = read_file(source)
        if isinstance(data, str):
            continue
        key = (source.language, xxhash.xxh3_64_hexdigest(data))
        pieces = cut.get(key)
        if pieces is None:
            pieces = tuple(
                (chunk.chunk_type, chunk.symbol, chunk.code, chunk.start_line, chunk.end_line)
                for chunk in chunk_file(data, source.language)
            )
        kept[key] = pieces
        first = next_id + len(added)
        added.extend([(first + i, ids[source.rel], *piece) for i, piece in enumerate(pieces)])
    cut.clear()
    cut.update(kept)
    return added


def _rows_of(delta: rows.ChunkRows, gone: set[str], ids: dict[str, int]) -> list[tuple[Any, ...]]:
    """A refresh's delta rows as ``database.chunk_rows`` gives them, those of ``gone`` files left out."""
    attributes = delta.attributes
    kept = []
    for i in range(len(delta.chunk_ids)):
        path = attributes.paths[int(attributes.file_codes[i])]
        if path in gone or path not in ids:
            continue
        start, end = int(delta.start_lines[i]), int(delta.end_lines[i])
        kept.append(
            (int(delta.chunk_ids[i]), ids[path], attributes.type_names[int(attributes.type_codes[i])],
             delta.symbols[i], delta.code[i], start or None, end or None)
        )  # fmt: skip
    return kept


def _alive_base(snapshot: Snapshot, base: Snapshot, gone: set[str]) -> np.ndarray:
    """Which of the base's rows still answer: those the snapshot keeps, of files not overlaid."""
    count = len(base.chunks.chunk_ids)
    live = snapshot.chunks.attributes.alive
    alive = np.ones(count, bool) if live is None else np.array(live[:count])
    return alive & ~_of_files(base.chunks.attributes.paths, gone)[np.asarray(base.chunks.attributes.file_codes)]


def _of_files(paths: Sequence[str], gone: set[str]) -> np.ndarray:
    return np.fromiter((p in gone for p in paths), bool, len(paths))


def _vectors(
    snapshot: Snapshot, base: Snapshot, embedding_set: Any, gone: set[str], files: Sequence[FileRow]
) -> vector_cache.VectorCache:
    """One model's vectors without those of overlaid files (the overlay's chunks have none)."""
    held = snapshot.vectors[embedding_set]
    own = base.vectors[same_set(base.embedding_sets, embedding_set)]
    columns = own.chunk_ids.size
    live = held.attributes.alive
    alive = np.ones(columns, bool) if live is None else np.array(live[:columns])
    alive &= ~_of_files(own.attributes.paths, gone)[np.asarray(own.attributes.file_codes)]
    if held.added is None:
        added = _taken(own, np.zeros(columns, bool))
    else:
        part = held.delta(columns)
        added = _taken(part, ~_of_files(part.attributes.paths, gone)[np.asarray(part.attributes.file_codes)])
    return own.joined(alive, added, files)


def _taken(cache: vector_cache.VectorCache, keep: np.ndarray) -> vector_cache.VectorCache:
    """The cache's rows ``keep`` marks, alone (none of them dead)."""
    renumbered = np.cumsum(keep) - 1

    def rows_of(found: np.ndarray) -> np.ndarray:
        return renumbered[found[keep[found]]] if found.size else found

    attributes = cache.attributes
    return dataclasses.replace(
        cache,
        matrix=np.asarray(cache.matrix[keep]),
        codes=np.asarray(cache.codes)[keep],
        signs=np.asarray(cache.signs)[keep],
        scales=np.asarray(cache.scales)[keep],
        residuals=np.asarray(cache.residuals)[keep],
        spans=np.asarray(cache.spans)[keep],
        added=None,
        chunk_ids=cache.chunk_ids[keep],
        embedding_ids=cache.embedding_ids[keep],
        places=cache.places[keep],
        digests=cache.digests[keep],
        start_lines=cache.start_lines[keep],
        attributes=dataclasses.replace(
            attributes, file_codes=attributes.file_codes[keep], type_codes=attributes.type_codes[keep], alive=None
        ),
        nan_rows=rows_of(cache.nan_rows),
        null_rows=rows_of(cache.null_rows),
        broken_rows=rows_of(cache.broken_rows),
    )


def _appended(
    held: vector_cache.VectorCache, snapshot: Snapshot, chunk_ids: Sequence[int], matrix: np.ndarray
) -> vector_cache.VectorCache:
    """``held`` (an overlaid snapshot's joined vectors) with these chunks' vectors after its rows."""
    assert snapshot.delta is not None
    delta = snapshot.delta
    rows_of = np.searchsorted(delta.chunk_ids, np.asarray(chunk_ids, np.int64))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    units = np.ascontiguousarray(matrix / np.where(norms == 0, 1, norms), dtype=np.float32)
    codes, scales, residuals, spans = quantised.encode(units)
    count = len(chunk_ids)
    before = held.chunk_ids.size
    starts = np.asarray(delta.start_lines)[rows_of]
    attributes = dataclasses.replace(
        delta.attributes,
        file_codes=np.asarray(delta.attributes.file_codes)[rows_of],
        type_codes=np.asarray(delta.attributes.type_codes)[rows_of],
        alive=None,
    )
    everything = np.ones(before, bool) if held.attributes.alive is None else np.asarray(held.attributes.alive)
    return dataclasses.replace(
        held,
        added=units if held.added is None else np.concatenate([held.added, units]),
        added_codes=codes if held.added_codes is None else np.concatenate([held.added_codes, codes]),
        scales=np.concatenate([held.scales, scales]),
        residuals=np.concatenate([held.residuals, residuals]),
        spans=np.concatenate([held.spans, spans]),
        chunk_ids=np.concatenate([held.chunk_ids, np.asarray(chunk_ids, np.int64)]),
        embedding_ids=np.concatenate([held.embedding_ids, -np.asarray(chunk_ids, np.int64)]),  # none in the index
        places=np.concatenate([held.places, np.full(count, -1, np.int64)]),
        digests=np.concatenate([held.digests, np.zeros(count, np.uint64)]),
        start_lines=np.concatenate([held.start_lines, np.where(starts == 0, np.iinfo(np.int64).max, starts)]),
        attributes=Attributes.joined(
            snapshot.files, [(held.attributes, everything), (attributes, np.ones(count, bool))]
        ),
        nan_rows=np.concatenate([held.nan_rows, before + np.flatnonzero(norms[:, 0] == 0)]),
    )
