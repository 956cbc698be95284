"""A snapshot's vectors read from ChunkHound's DuckDB file: a first read's (``build``, window by window, written to
disk as they come) and a refresh's delta (``build_of``, the vectors of a few ids), into a ``VectorCache``.

Each window of rowids is read on a thread of its own while the last one is normalised (``unit_rows``), encoded
(``quantised``) and written (``spill``); the rows that pass the joins are exactly those ChunkHound's semantic SQL
ranks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from onetool_code.errors import IndexUnreadableError
from onetool_code.hits import FileRow
from onetool_code.index import database, quantised, spill, unit_rows
from onetool_code.index.attributes import Attributes
from onetool_code.index.vector_cache import VectorCache

if TYPE_CHECKING:
    import duckdb

T = TypeVar("T")

# The build reads vectors in windows of rowids, so that two windows of per-row arrays at most (the one being
# written, the next being read) exist beside the matrix, which is on disk as it is read.
WINDOW_BYTES = 64 << 20  # 10,922 x 1536: windows of 1,365 cost DuckDB 1.4x more per row

NULL_LINE = np.int64(np.iinfo(np.int64).max)  # DuckDB sorts NULL start lines last (np.where wraps a bare int)


def build(
    con: duckdb.DuckDBPyConnection,
    db_path: Path,
    embedding_set: database.EmbeddingSet,
    files: Sequence[FileRow],
    progress: Callable[[int, int], None] | None = None,
    spilled: Path | None = None,
) -> VectorCache:
    """Read one provider/model's vectors through ``con`` (read-only) into a new cache; ``files`` are
    ``database.file_rows`` of the same connection; ``progress`` hears (vectors read, vectors in all);
    ``spilled``: a folder where the float32 matrix and its codes are written as they are read, then mapped."""
    count, low, high = database.vector_extent(con, embedding_set)
    window = max(256, WINDOW_BYTES // (embedding_set.dims * 4))
    windows = (
        unit_rows.stacked(database.vector_window(con, embedding_set, start, start + window), embedding_set.dims)
        for start in range(low, high + 1, window)
    )
    return _assemble(db_path, embedding_set, files, count, _ahead(windows), progress, spilled)


def _ahead(windows: Iterator[T]) -> Iterator[T]:
    """The windows, each read on a thread of its own while the one before is normalised, encoded and written:
    DuckDB lets go of the GIL while it reads."""
    with ThreadPoolExecutor(1, thread_name_prefix="onetool-code vectors") as pool:
        pending = pool.submit(next, windows, None)
        while (window := pending.result()) is not None:
            pending = pool.submit(next, windows, None)
            yield window


def build_of(
    con: duckdb.DuckDBPyConnection,
    db_path: Path,
    embedding_set: database.EmbeddingSet,
    files: Sequence[FileRow],
    embedding_ids: np.ndarray,
) -> VectorCache:
    """The vectors of these embeddings.id values only: a refresh's delta."""
    window = max(256, WINDOW_BYTES // (embedding_set.dims * 4))
    ids = np.sort(embedding_ids)
    windows = (
        unit_rows.stacked(database.vectors_by_id(con, embedding_set, ids[start : start + window]), embedding_set.dims)
        for start in range(0, ids.size, window)
    )
    return _assemble(db_path, embedding_set, files, ids.size, windows)


def _assemble(
    db_path: Path,
    embedding_set: database.EmbeddingSet,
    files: Sequence[FileRow],
    count: int,
    windows: Iterable[dict[str, np.ndarray]],
    progress: Callable[[int, int], None] | None = None,
    spilled: Path | None = None,
) -> VectorCache:
    started = time.perf_counter()
    file_ids = np.fromiter((f.file_id for f in files), dtype=np.int64, count=len(files))
    by_id = np.argsort(file_ids)
    dims = embedding_set.dims
    if spilled is not None:
        try:
            folder = spilled / f"vectors-{embedding_set.dims}-{embedding_set.provider}-{embedding_set.model}".replace(
                "/", "_"
            )
            folder.mkdir(parents=True)
        except OSError:
            spilled = None  # a cache directory that cannot be written: the vectors are held, as a delta's are
    if spilled is None:
        matrix = np.empty((count, dims), dtype=np.float32)
        codes = np.empty((count, dims), dtype=np.int8)
        signs = np.empty((count, quantised.sign_bytes(dims)), dtype=np.uint8)
        writers = None
    else:
        writers = (
            spill.Writer(folder / "matrix.npy", (count, dims), np.float32),
            spill.Writer(folder / "codes.npy", (count, dims), np.int8),
            spill.Writer(folder / "signs.npy", (count, quantised.sign_bytes(dims)), np.uint8),
        )
    scales, residuals, spans = (np.empty(count, dtype=np.float64) for _ in range(3))
    chunk_ids = np.empty(count, dtype=np.int64)
    embedding_ids = np.empty(count, dtype=np.int64)
    places = np.empty(count, dtype=np.int64)
    digests = np.empty(count, dtype=np.uint64)
    start_lines = np.empty(count, dtype=np.int64)
    file_codes = np.empty(count, dtype=np.int32)
    type_codes = np.empty(count, dtype=np.int32)
    types: dict[str, int] = {}
    nan_rows: list[np.ndarray] = []
    null_rows: list[np.ndarray] = []
    broken_rows: list[np.ndarray] = []
    filled = 0
    for columns in windows:
        n = len(columns["chunk_id"])
        if filled + n > count:
            raise IndexUnreadableError(f"Cannot read the index {db_path}: it changed while its vectors were read.")
        part = slice(filled, filled + n)
        chunk_ids[part] = np.ma.getdata(columns["chunk_id"])
        embedding_ids[part] = np.ma.getdata(columns["id"])
        places[part] = np.ma.getdata(columns["place"])
        lines = columns["start_line"]
        start_lines[part] = np.where(np.ma.getmaskarray(lines), NULL_LINE, np.ma.getdata(lines).astype(np.int64))
        file_codes[part] = by_id[np.searchsorted(file_ids, np.ma.getdata(columns["file_id"]), sorter=by_id)]
        type_codes[part] = np.fromiter(
            (types.setdefault(str(t), len(types)) for t in np.ma.getdata(columns["chunk_type"])), np.int32, n
        )
        block, null, broken = columns["block"], columns["null"], columns["broken"]
        unscorable, digests[part] = unit_rows.fill(block, null, broken)
        block_codes, scales[part], residuals[part], spans[part] = quantised.encode(block)
        if writers is None:
            matrix[part], codes[part], signs[part] = block, block_codes, quantised.signs(block)
        else:
            writers[0].write(block)
            writers[1].write(block_codes)
            writers[2].write(quantised.signs(block))
        nan_rows.append(np.flatnonzero(unscorable) + filled)
        null_rows.append(np.flatnonzero(null) + filled)
        broken_rows.append(np.flatnonzero(broken) + filled)
        filled += n
        if progress is not None:
            progress(filled, count)
    if filled != count:
        raise IndexUnreadableError(f"Cannot read the index {db_path}: it changed while its vectors were read.")
    if writers is not None:
        matrix, codes, signs = (writer.mapped() for writer in writers)
    arrays = [
        matrix,
        codes,
        signs,
        scales,
        residuals,
        spans,
        chunk_ids,
        embedding_ids,
        places,
        digests,
        start_lines,
        file_codes,
        type_codes,
    ]
    for array in arrays:
        array.flags.writeable = False  # shared by concurrent searches: nothing may change them
    return VectorCache(
        db_path=str(db_path),
        embedding_set=embedding_set,
        matrix=matrix,
        codes=codes,
        signs=signs,
        scales=scales,
        residuals=residuals,
        spans=spans,
        chunk_ids=chunk_ids,
        embedding_ids=embedding_ids,
        places=places,
        digests=digests,
        start_lines=start_lines,
        attributes=Attributes.of(files, file_codes, type_codes, tuple(types)),
        nan_rows=_joined(nan_rows),
        null_rows=_joined(null_rows),
        broken_rows=_joined(broken_rows),
        build_seconds=time.perf_counter() - started,
    )


def _joined(parts: Sequence[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)
