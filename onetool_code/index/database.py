"""Read-only access to a ChunkHound index: open late, run ``schema``'s SQL, close before returning.

The trap: any open connection, even read-only, locks ChunkHound out of its own index (and a writer locks
us out). So a connection lives for one call, never in a cache, and DuckDB errors become ours here.
Opening costs about 20 ms (duckdb 2.0), most of a warm cached search; attaching the file to a long-lived
in-memory DuckDB instead costs 1.5 ms, but its resident memory grew with every attach and detach (270, 425,
564 MB over three searches of a 30,000-chunk index, against a flat 80 MB with connect and close), so no.
Extension autoloading is off: an HNSW index in the file must never make DuckDB try to download vss. The
progress bar is off: DuckDB draws it on stdout, which is OneTool's MCP channel.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onetool_code import advice, schema
from onetool_code.errors import IndexLockedError, IndexUnreadableError, NotIndexedError
from onetool_code.hits import FileRow, FileState, Hit
from onetool_code.index import holders
from onetool_code.reading import is_regular

if TYPE_CHECKING:
    import duckdb
    import numpy as np

_LOCK = re.compile(r"Conflicting lock is held in (?P<exe>.*?) \(PID (?P<pid>\d+)\)")
# What DuckDB says about a damaged or foreign file, or about data in it that no query can use (a stored vector
# holding NULL values fails ChunkHound's own cosine too).
_FILE_TROUBLE = ("not a valid DuckDB database", "Could not read", "orrupt", "can not contain NULL values")


@dataclass(frozen=True)
class EmbeddingSet:
    """The vectors one provider/model left in the index."""

    provider: str
    model: str
    dims: int
    count: int

    def describe(self) -> str:
        return f"{self.provider}/{self.model}, {self.dims} dims ({self.count:,} chunks)"


@dataclass(frozen=True)
class Layout:
    """What the file holds: ChunkHound's tables (checked) and its embedding sets."""

    db_path: Path
    embedding_sets: tuple[EmbeddingSet, ...]


def not_indexed(project_root: Path, db_path: Path) -> NotIndexedError:
    """Nothing of the index exists: each step named works as written (our indexer wants a key for vectors, and
    a file named elsewhere than ChunkHound's default is written there only when named again)."""
    if db_path != project_root / ".chunkhound" / "db" / schema.DB_FILE_NAME:
        return NotIndexedError(
            f"No index at {db_path}, the index file named by {advice.parameter('db')} (or tools.code.db, the project's "
            f".chunkhound.json, CHUNKHOUND_DATABASE__PATH): check that path, or write the index there with "
            f"chunkhound index {shlex.quote(str(project_root))} --db {shlex.quote(str(db_path))}"
        )
    return NotIndexedError(
        f"Project not indexed. Run: chunkhound index {project_root} (expected database at: {db_path}; or build "
        f"a compatible index with: {advice.index_command(project_root)}, or without an embeddings key, enough for "
        f"words: {advice.index_command(project_root, embeddings=False)})"
    )


def locked(db_path: Path, pid: str, exe: str = "") -> IndexLockedError:
    holder = f" ({Path(exe).name}, PID {pid})" if exe else f" (PID {pid})"
    return IndexLockedError(
        f"the index is in use by ChunkHound{holder}: it holds {db_path} read-write right now. "
        "Retry when it has finished (indexing usually takes seconds to minutes), or run its MCP server "
        "with `chunkhound mcp --read-only` so that readers can share the index."
    )


# How long a read waits for ChunkHound's compaction to put the rebuilt file in place (0.2 s for a small index; a
# search with a snapshot does not wait, it answers from the snapshot).
COMPACTION_PATIENCE_SECONDS = 30.0


def check_file(project_root: Path, db_path: Path) -> None:
    """The index file exists and is a file: the errors a user can act on, before anything reads it. While
    ChunkHound compacts it, waits at most ``COMPACTION_PATIENCE_SECONDS`` for the rebuilt file."""
    deadline = time.monotonic() + COMPACTION_PATIENCE_SECONDS
    while not db_path.exists():
        if holders.gone(db_path):
            raise not_indexed(project_root, db_path)
        if time.monotonic() >= deadline:
            raise IndexLockedError(
                f"the index {db_path} is being compacted by ChunkHound (it is rebuilt beside itself and renamed "
                "back into place); search again in a moment"
            )
        time.sleep(0.05)
    if db_path.is_dir():
        raise IndexUnreadableError(
            f"{db_path} is a directory, not an index file (expected {schema.DB_FILE_NAME} inside it?)"
        )
    # A FIFO or a device in the place of the file or of its WAL (which DuckDB opens too) would block the open.
    wal = db_path.with_name(db_path.name + schema.WAL_SUFFIX)
    for path in (db_path, wal):
        if (path == db_path or path.exists() or path.is_symlink()) and not is_regular(path):
            raise IndexUnreadableError(f"{path} is not a regular file, so not part of an index")


@contextmanager
def connect(project_root: Path, db_path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for the duration of the block; closed on every path out."""
    check_file(project_root, db_path)
    with session(db_path, read_only=True) as con:
        yield con


@contextmanager
def session(
    db_path: Path, *, read_only: bool, config: dict[str, str] | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection with our safety settings and DuckDB's errors translated (the reader's, and the
    indexer's for writing); closed on every path out."""
    import duckdb

    with holders.OPEN_LOCK:
        holders.OPEN[str(db_path)] += 1
    try:
        con = duckdb.connect(
            str(db_path),
            read_only=read_only,
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False, **(config or {})},
        )
    except duckdb.Error as exc:
        _closed(db_path)
        raise _translate(db_path, exc, read_only) from exc
    try:
        # DuckDB draws a progress bar on stdout for slow queries; inside OneTool stdout is the MCP channel.
        con.execute(schema.NO_PROGRESS_BAR_SQL)
        yield con
    except duckdb.Error as exc:
        if not _about_the_file(exc):
            raise  # a binder, parser or catalog error of our own SQL is our bug: it must not read as the user's
        raise _translate(db_path, exc, read_only) from exc
    finally:
        con.close()
        _closed(db_path)


def _closed(db_path: Path) -> None:
    with holders.OPEN_LOCK:
        holders.OPEN[str(db_path)] -= 1


def _about_the_file(exc: Exception) -> bool:
    """Whether a DuckDB error is about the file (a lock, IO, a damaged or foreign file), not about our SQL."""
    import duckdb

    text = str(exc)
    return (
        isinstance(exc, (duckdb.IOException, duckdb.SerializationException))
        or _LOCK.search(text) is not None
        or any(sign in text for sign in _FILE_TROUBLE)
    )


def _translate(db_path: Path, exc: Exception, read_only: bool) -> Exception:
    text = str(exc)
    match = _LOCK.search(text)
    if match:
        return locked(db_path, match.group("pid"), match.group("exe"))
    first = text.splitlines()[0][:300] if text else type(exc).__name__
    if "not a valid DuckDB database" in text or "Could not read" in text or "orrupt" in text:
        return IndexUnreadableError(f"{db_path} is not a readable DuckDB index file: {first}")
    return IndexUnreadableError(f"Cannot {'read' if read_only else 'write'} the index {db_path}: {first}")


def layout(con: duckdb.DuckDBPyConnection, db_path: Path) -> Layout:
    """Check that the file has ChunkHound's tables and columns; list its embedding sets."""
    columns: dict[str, set[str]] = {}
    for table, column in con.execute(schema.TABLE_COLUMNS_SQL).fetchall():
        columns.setdefault(table, set()).add(column)
    for table, required in schema.REQUIRED_COLUMNS.items():
        if table not in columns:
            raise IndexUnreadableError(f"{db_path} is not a ChunkHound index: it has no '{table}' table.")
        missing = sorted(required - columns[table])
        if missing:
            raise IndexUnreadableError(
                f"{db_path} is not a ChunkHound index: table '{table}' lacks column(s) {', '.join(missing)}."
            )
    sets: list[EmbeddingSet] = []
    for dims in schema.embedding_dims(columns):
        table = schema.embedding_table(dims)
        missing = sorted(schema.EMBEDDING_COLUMNS - columns[table])
        if missing:
            raise IndexUnreadableError(
                f"{db_path} is not a ChunkHound index: table '{table}' lacks column(s) {', '.join(missing)}."
            )
        for provider, model, count in con.execute(schema.MODELS_SQL.format(table=table)).fetchall():
            sets.append(EmbeddingSet(provider, model, dims, count))
    return Layout(db_path, tuple(sets))


def language_counts(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int, int]]:
    """(language, files, chunks) for every language in the index, most chunks first."""
    return [
        (str(lang), int(files), int(chunks))
        for lang, files, chunks in con.execute(schema.LANGUAGE_COUNTS_SQL).fetchall()
    ]


def totals(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(files, chunks)."""
    files = con.execute(schema.FILE_COUNT_SQL).fetchone()
    chunks = con.execute(schema.CHUNK_COUNT_SQL).fetchone()
    return int(files[0] if files else 0), int(chunks[0] if chunks else 0)


def semantic(
    con: duckdb.DuckDBPyConnection,
    embedding_set: EmbeddingSet,
    vectors: np.ndarray,
    filters: schema.Filters,
    limit: int,
    offset: int,
) -> list[list[Hit]]:
    """One ranked list per query vector, by ChunkHound's own SQL."""
    sql, filter_params = schema.semantic_sql(embedding_set.dims, filters)
    results = []
    for vector in vectors:
        params = [vector.tolist(), embedding_set.provider, embedding_set.model, *filter_params, limit, offset]
        results.append([_hit(row) for row in con.execute(sql, params).fetchall()])
    return results


def chunks_holding(con: duckdb.DuckDBPyConnection, path: str, line: int) -> list[int] | None:
    """The ids of the chunks of ``path`` holding ``line``, the smallest first; None when the index has no such file."""
    indexed = con.execute(schema.FILE_INDEXED_SQL, [path]).fetchone()
    if not indexed or not indexed[0]:
        return None
    return [int(row[0]) for row in con.execute(schema.CHUNKS_HOLDING_SQL, [path, line, line]).fetchall()]


def vector_of(con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet, chunk_id: int) -> np.ndarray | None:
    """The chunk's stored vector of that provider/model, as stored; None when it has none (or a NULL one)."""
    import numpy as np

    sql = schema.vector_of_sql(embedding_set.dims)
    row = con.execute(sql, [chunk_id, embedding_set.provider, embedding_set.model]).fetchone()
    if row is None or row[0] is None or any(value is None for value in row[0]):
        return None
    return np.asarray(row[0], dtype=np.float32)


def regex(con: duckdb.DuckDBPyConnection, pattern: str, filters: schema.Filters, limit: int) -> list[Hit]:
    """Chunks whose code matches ``pattern``; DuckDB's InvalidInputException for a bad pattern is the caller's."""
    sql, params = schema.regex_sql(filters)
    return [_hit(row) for row in con.execute(sql, [pattern, *params, limit]).fetchall()]


def defining(
    con: duckdb.DuckDBPyConnection, names: Sequence[str], pattern: str, filters: schema.Filters, limit: int
) -> list[Hit]:
    """Chunks that define ``names`` (lowercase), by symbol or by a line ``pattern`` matches (RE2), as
    ``rows.ChunkRows.defining`` finds them in a snapshot."""
    sql, params = schema.defining_sql(filters)
    return [_hit(row) for row in con.execute(sql, [list(names), pattern, *params, limit]).fetchall()]


def chunks_by_id(con: duckdb.DuckDBPyConnection, ids: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """Rows (in HIT_COLUMNS order, without a score) of the given chunk ids."""
    if not ids:
        return {}
    rows = con.execute(schema.CHUNKS_BY_ID_SQL, [[int(i) for i in dict.fromkeys(ids)]]).fetchall()
    return {int(row[0]): row for row in rows}


def _hit(row: Sequence[Any], score: float | None = None) -> Hit:
    chunk_id, symbol, code, chunk_type, start, end, path, language = row[:8]
    value = row[8] if score is None else score
    return Hit(
        chunk_id=int(chunk_id),
        file_path=str(path),
        language=str(language or "unknown"),
        chunk_type=str(chunk_type or "unknown"),
        symbol=str(symbol or ""),
        code=str(code or ""),
        start_line=int(start or 1),
        end_line=int(end or start or 1),
        score=float(value if value is not None else 0.0),
    )


def with_file_states(con: duckdb.DuckDBPyConnection, lists: Sequence[Sequence[Hit]]) -> list[list[Hit]]:
    """The hits with their file's row state attached (``Hit.file``), in one small query on the connection that
    found them: shaping decides from it whether a file changed since indexing, and a second connection would
    cost more than the whole query (about 30 ms to open)."""
    paths = sorted({hit.file_path for hits in lists for hit in hits})
    if not paths:
        return [list(hits) for hits in lists]
    states = {str(row["path"]): _state(row) for row in _named(con.execute(schema.FILE_STATES_SQL, [paths]))}
    return [[replace(hit, file=states.get(hit.file_path)) for hit in hits] for hits in lists]


def _named(cursor: duckdb.DuckDBPyConnection) -> Iterator[dict[str, Any]]:
    names = [column[0] for column in cursor.description or ()]
    for row in cursor.fetchall():
        yield dict(zip(names, row, strict=True))


def _state(row: dict[str, Any]) -> FileState:
    """A ``files`` row's size, mtime and hash, by name: indexes written before ChunkHound added ``content_hash``
    (or without ``size``) lack columns."""
    size, mtime = row.get(schema.FILE_SIZE_COLUMN), row.get(schema.FILE_MTIME_COLUMN)
    digest = row.get(schema.FILE_HASH_COLUMN)
    return FileState(
        size=None if size is None else int(size), mtime=_epoch(mtime), content_hash=str(digest) if digest else None
    )


def _epoch(value: object) -> float | None:
    """``modified_time`` in seconds: ChunkHound writes ``to_timestamp(epoch)`` into a TIMESTAMP column, which
    DuckDB hands back as a naive local datetime (the indexer's ``epoch(modified_time::TIMESTAMPTZ)`` reads the same)."""
    if isinstance(value, datetime):
        return value.timestamp()
    return float(value) if isinstance(value, int | float) else None


def hit_from_row(row: Sequence[Any], score: float) -> Hit:
    """A hit from a ``chunks_by_id`` row and a score computed elsewhere (a ranking held in memory)."""
    return _hit(row, score)


def file_rows(con: duckdb.DuckDBPyConnection) -> list[FileRow]:
    """Every file with its chunk count and row state, in DuckDB's ``ORDER BY path`` (the tie-break's order)."""
    states = {int(row["id"]): _state(row) for row in _named(con.execute(schema.FILE_ROWS_SQL))}
    return [
        FileRow(int(file_id), str(path), str(lower), None if language is None else str(language), int(chunks),
                states[int(file_id)])
        for file_id, path, lower, language, chunks in con.execute(schema.FILES_IN_PATH_ORDER_SQL).fetchall()
    ]  # fmt: skip


def chunk_rows(con: duckdb.DuckDBPyConnection, ids: np.ndarray | None = None) -> list[tuple[Any, ...]]:
    """Every chunk whose file row exists (or those of ``ids``) as (id, file id, chunk type, symbol, code, start
    line, end line), by id."""
    if ids is None:
        return con.execute(schema.CHUNK_ROWS_SQL).fetchall()
    return con.execute(schema.CHUNK_ROWS_BY_ID_SQL, [ids.tolist()]).fetchall() if ids.size else []


def chunk_windows(con: duckdb.DuckDBPyConnection, ids_per_window: int) -> tuple[int, Iterator[list[tuple[Any, ...]]]]:
    """(how many rows ``chunk_rows`` would return, those rows a window of ids at a time, in id order): a first
    read holds one window."""
    count, low, high = con.execute(schema.CHUNK_EXTENT_SQL).fetchone() or (0, None, None)
    if not count:
        return 0, iter(())
    starts = range(int(low), int(high) + 1, ids_per_window)
    sql = schema.CHUNK_ROWS_WINDOW_SQL
    return int(count), (con.execute(sql, [start, start + ids_per_window]).fetchall() for start in starts)


def chunk_ids(con: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(chunk ids ascending, their file ids, digests of their rows) of every chunk whose file row exists: what a
    refresh compares."""
    import numpy as np

    columns = con.execute(schema.CHUNK_IDS_SQL).fetchnumpy()
    return tuple(np.asarray(columns[name], dtype=dtype) for name, dtype in _ID_COLUMNS)  # type: ignore[return-value]


_ID_COLUMNS = (("id", "int64"), ("file_id", "int64"), ("digest", "uint64"))


def embedding_ids(
    con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(embeddings.id, rowid, chunk id) of every vector of one provider/model the semantic query would rank."""
    import numpy as np

    sql = schema.EMBEDDING_IDS_SQL.format(table=schema.embedding_table(embedding_set.dims))
    columns = con.execute(sql, [embedding_set.provider, embedding_set.model]).fetchnumpy()
    return tuple(np.asarray(columns[name], dtype=np.int64) for name in ("id", "place", "chunk_id"))  # type: ignore[return-value]


def embeddings_by_id(
    con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet, ids: np.ndarray
) -> dict[str, np.ndarray]:
    """Columns id and embedding (an object array, masked where NULL) of the vectors of these embeddings.id values."""
    sql = schema.EMBEDDINGS_BY_ID_SQL.format(table=schema.embedding_table(embedding_set.dims))
    return con.execute(sql, [ids.tolist()]).fetchnumpy()


def vectors_by_id(
    con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet, ids: np.ndarray
) -> dict[str, np.ndarray]:
    """The columns of ``vector_window`` for the vectors of these embeddings.id values."""
    sql = schema.CACHE_VECTORS_BY_ID_SQL.format(table=schema.embedding_table(embedding_set.dims))
    return con.execute(sql, [ids.tolist()]).fetchnumpy()


def vector_extent(con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet) -> tuple[int, int, int]:
    """(rows the semantic query would rank, lowest rowid, highest rowid) of one provider/model."""
    sql = schema.CACHE_VECTOR_EXTENT_SQL.format(table=schema.embedding_table(embedding_set.dims))
    row = con.execute(sql, [embedding_set.provider, embedding_set.model]).fetchone()
    count, low, high = row if row else (0, 0, -1)
    return int(count), int(low), int(high)


def vector_window(
    con: duckdb.DuckDBPyConnection, embedding_set: EmbeddingSet, start: int, stop: int
) -> dict[str, np.ndarray]:
    """Columns id, place (rowid), chunk_id, file_id, chunk_type, start_line, embedding of the rows with
    ``start <= rowid < stop``.

    As numpy arrays (``embedding`` an object array of float32 rows); masked where the index holds NULL.
    """
    import numpy as np

    table = schema.embedding_table(embedding_set.dims)
    parameters = [embedding_set.provider, embedding_set.model, start, stop]
    columns = con.execute(schema.CACHE_VECTOR_ROWS_SQL.format(table=table), parameters).fetchnumpy()
    values = con.execute(schema.CACHE_VECTOR_VALUES_SQL.format(table=table), parameters).fetchnumpy()
    held = np.ma.getdata(values["place"])
    order = np.argsort(held)
    wanted = np.ma.getdata(columns["place"])
    columns["embedding"] = values["embedding"][order[np.searchsorted(held, wanted, sorter=order)]]
    return columns
