"""DuckDB reads and writes of the indexer: a read-only snapshot first, then every change in one transaction.

Traps, each measured:

- A killed run must leave the previous index usable: all inserts, updates and deletes of a run are one
  transaction (DuckDB drops an uncommitted one on the next open). Only the rows of deleted *files* go in a second
  transaction, because deleting a file row in the transaction that deleted its chunks trips DuckDB's
  foreign-key check; if the run dies between the two, the index holds a file row with no chunks, which readers
  ignore and the next run removes.
- duckdb 2.x writes a storage format ChunkHound's duckdb 1.5 cannot read, unless new files are created with
  ``schema.STORAGE_COMPATIBILITY``.
- Writing to an ``embeddings_<dims>`` table that carries an HNSW index fails without the vss extension, and a
  second write then spins at 100% CPU: ``check_writable`` refuses before anything is written. vss is only ever
  loaded when already installed (autoinstall off: ``INSTALL`` would download).
- Any open connection locks ChunkHound out (and its lock locks us out): connections live for one phase only.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from onetool_code import index, schema
from onetool_code.errors import IndexUnreadableError, OneToolCodeError
from onetool_code.project.chunks import Chunk
from onetool_code.project.languages import extension_of
from onetool_code.reading import SMALL_FILE, read_regular

if TYPE_CHECKING:
    import duckdb

_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_SIDECAR_VERSION = 1


@dataclass(frozen=True)
class StoredFile:
    id: int
    size: int | None
    mtime: float | None
    content_hash: str | None


@dataclass(frozen=True)
class Snapshot:
    """What the index held before this run. ``unembedded``: (chunk id, file id, code) lacking a vector."""

    exists: bool
    files: dict[str, StoredFile] = field(default_factory=dict)
    embedding_dims: tuple[int, ...] = ()
    hnsw_indexes: tuple[tuple[str, str], ...] = ()  # (table, index)
    chunk_count: int = 0
    unembedded: tuple[tuple[int, int, str], ...] = ()
    model_dims: int | None = None  # size of the vectors the configured provider/model already has here


@dataclass(frozen=True)
class FileContent:
    """A new or changed file as it will be stored."""

    rel: str
    size: int
    mtime: float
    content_hash: str
    language: str
    chunks: tuple[Chunk, ...]


@dataclass
class Plan:
    """Every change of one run. ``new_vectors`` rows follow the chunks of ``added`` then ``changed``, in order."""

    added: list[FileContent] = field(default_factory=list)
    changed: list[tuple[int, FileContent]] = field(default_factory=list)
    touched: list[tuple[int, int, float]] = field(default_factory=list)  # (file id, size, mtime): same content
    removed: list[int] = field(default_factory=list)
    new_vectors: np.ndarray | None = None
    old_chunk_ids: list[int] = field(default_factory=list)
    old_vectors: np.ndarray | None = None

    def is_empty(self) -> bool:
        return not (self.added or self.changed or self.touched or self.removed or self.old_chunk_ids)

    def new_chunks(self) -> list[Chunk]:
        return [c for f in (*self.added, *(f for _, f in self.changed)) for c in f.chunks]


@dataclass(frozen=True)
class WriteResult:
    chunk_total: int
    hnsw: bool


# -- reading -------------------------------------------------------------------------------------------------


def read_snapshot(project_root: Path, db_path: Path, *, provider: str, model: str, embeddings: bool) -> Snapshot:
    """The current index, read-only; an empty snapshot when there is none (or only an empty DuckDB file).

    Raises IndexLockedError when ChunkHound holds the file, IndexUnreadableError for a foreign file.
    """
    if not db_path.exists():
        return Snapshot(exists=False)
    with index.connect(project_root, db_path) as con:
        con.execute(schema.NO_PROGRESS_BAR_SQL)
        tables = {row[0] for row in con.execute(schema.TABLE_COLUMNS_SQL).fetchall()}
        if not tables:
            return Snapshot(exists=False)
        layout = index.layout(con, db_path)
        files = {
            str(path): StoredFile(int(file_id), size, float(mtime) if mtime is not None else None, content_hash)
            for file_id, path, size, mtime, content_hash in con.execute(schema.STORED_FILES_SQL).fetchall()
        }
        dims = tuple(sorted({s.dims for s in layout.embedding_sets} | set(schema.embedding_dims(tables))))
        hnsw = tuple((str(t), str(i)) for t, i in con.execute(schema.HNSW_INDEXES_SQL).fetchall())
        count_row = con.execute(schema.CHUNK_COUNT_SQL).fetchone()
        unembedded: tuple[tuple[int, int, str], ...] = ()
        if embeddings:
            sql, pairs = schema.unembedded_chunks_sql(dims)
            rows = con.execute(sql, [provider, model] * pairs).fetchall()
            unembedded = tuple((int(i), int(f), str(code)) for i, f, code in rows)
    model_dims = next((s.dims for s in layout.embedding_sets if (s.provider, s.model) == (provider, model)), None)
    return Snapshot(True, files, dims, hnsw, int(count_row[0]) if count_row else 0, unembedded, model_dims)


def vss_available() -> bool:
    """Whether the vss extension is installed locally and loads (never downloads it)."""
    import duckdb

    con = duckdb.connect(":memory:", config=_CONFIG)
    try:
        return _load_vss(con)
    finally:
        con.close()


def _load_vss(con: duckdb.DuckDBPyConnection) -> bool:
    import duckdb

    row = con.execute(schema.VSS_INSTALLED_SQL).fetchone()
    if not row or not row[0]:
        return False
    try:
        con.execute(schema.VSS_LOAD_SQL)
    except duckdb.Error:
        return False
    return True


def check_writable(project_root: Path, db_path: Path, snapshot: Snapshot, vss: bool, drop_hnsw: bool) -> None:
    """Refuse, before any write, an index whose HNSW index we could neither update nor (by request) drop."""
    if not snapshot.hnsw_indexes or vss or drop_hnsw:
        return
    names = ", ".join(index_name for _, index_name in snapshot.hnsw_indexes)
    raise OneToolCodeError(
        f"The index {db_path} has an HNSW vector index ({names}), which DuckDB can only update with the vss "
        "extension, and vss is not installed here (onetool-code never downloads it); writing without it fails "
        "and then hangs. To proceed, either: drop the HNSW index and update (--drop-hnsw, or drop_hnsw=True; "
        "searches stay exact, and ChunkHound re-creates the index the next time it opens the file); or update "
        f"with ChunkHound (`chunkhound index {project_root}`); or delete {db_path} and its "
        f"{db_path.name}.*.json sidecars and build afresh; or install the vss extension for this duckdb version "
        "(pip install duckdb-extension-vss==<duckdb version>, then INSTALL it from that file)."
    )


# -- writing -------------------------------------------------------------------------------------------------


def _connect(db_path: Path) -> contextlib.AbstractContextManager[duckdb.DuckDBPyConnection]:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    return index.session(
        db_path, read_only=False, config={"storage_compatibility_version": schema.STORAGE_COMPATIBILITY}
    )


def write(db_path: Path, plan: Plan, *, provider: str, model: str, vss: bool, drop: Sequence[str] = ()) -> WriteResult:
    """Apply ``plan``: one transaction for every change, then one for the rows of deleted files.

    ``drop`` names HNSW indexes to drop first, each committed on its own: DuckDB without vss can drop one, but
    not inside the transaction that then writes to its table (measured on duckdb 2.0).
    """
    with _connect(db_path) as con:
        if vss:
            _load_vss(con)
        for name in drop:
            con.execute(schema.drop_index_sql(name))
        # The schema first, committed on its own (a no-op on an existing index): a first build that is killed
        # leaves an empty index, which readers open, rather than a DuckDB file without tables.
        con.execute("BEGIN TRANSACTION")
        for statement in schema.SCHEMA_DDL:
            con.execute(statement)
        con.execute(schema.SCHEMA_VERSION_SQL, list(schema.SCHEMA_VERSION_ROW))
        con.execute("COMMIT")
        con.execute("BEGIN TRANSACTION")
        tables = {row[0] for row in con.execute(schema.TABLE_COLUMNS_SQL).fetchall()}
        dims_list = schema.embedding_dims(tables)
        gone = plan.removed + [file_id for file_id, _ in plan.changed]
        if gone:
            for dims in dims_list:
                con.execute(schema.delete_embeddings_sql(dims), [gone])
            con.execute(schema.DELETE_CHUNKS_SQL, [gone])
        for file_id, size, mtime in plan.touched:
            con.execute(schema.TOUCH_FILE_SQL, [size, mtime, file_id])
        for file_id, content in plan.changed:
            con.execute(schema.UPDATE_FILE_SQL, [content.size, content.mtime, content.content_hash, file_id])
            con.execute(schema.UPDATE_FILE_LANGUAGE_SQL, [content.language, file_id, content.language])
        new_ids = _insert_files(con, plan.added)
        file_ids = new_ids + [file_id for file_id, _ in plan.changed]
        contents = [*plan.added, *(content for _, content in plan.changed)]
        chunk_ids = _insert_chunks(con, list(zip(file_ids, contents, strict=True)))
        written_dims: set[int] = set()
        for ids, vectors in ((chunk_ids, plan.new_vectors), (plan.old_chunk_ids, plan.old_vectors)):
            if vectors is not None and len(ids):
                _insert_vectors(con, ids, vectors, provider, model)
                written_dims.add(int(vectors.shape[1]))
        con.execute("COMMIT")
        if plan.removed:
            con.execute(schema.DELETE_FILES_SQL, [plan.removed])
        if vss:
            con.execute(schema.HNSW_PERSISTENCE_SQL)
            for dims in sorted(written_dims | set(dims_list)):
                con.execute(schema.hnsw_ddl(dims))
        hnsw = bool(con.execute(schema.HNSW_INDEXES_SQL).fetchall())
        count_row = con.execute(schema.CHUNK_COUNT_SQL).fetchone()
    return WriteResult(chunk_total=int(count_row[0]) if count_row else 0, hnsw=hnsw)


def _next_ids(con: duckdb.DuckDBPyConnection, sequence: str, count: int) -> list[int]:
    if count == 0:
        return []
    rows = con.execute(schema.NEXT_IDS_SQL.format(sequence=sequence), [count]).fetchall()
    return sorted(int(r[0]) for r in rows)


@contextlib.contextmanager
def _view(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, np.ndarray]) -> Iterator[str]:
    """Expose numpy columns to SQL for one bulk insert (parameters would convert value by value: far slower)."""
    con.register(name, columns)
    try:
        yield name
    finally:
        con.unregister(name)


def _insert_files(con: duckdb.DuckDBPyConnection, added: Sequence[FileContent]) -> list[int]:
    ids = _next_ids(con, schema.FILES_ID_SEQUENCE, len(added))
    if not ids:
        return []
    columns = {
        "id": np.array(ids, dtype=np.int32),
        "path": _strings(f.rel for f in added),
        "name": _strings(f.rel.rsplit("/", 1)[-1] for f in added),
        "extension": _strings(extension_of(PurePosixPath(f.rel)) for f in added),
        "size": np.array([f.size for f in added], dtype=np.int64),
        "mtime": np.array([f.mtime for f in added], dtype=np.float64),
        "content_hash": _strings(f.content_hash for f in added),
        "language": _strings(f.language for f in added),
    }
    with _view(con, "onetool_new_files", columns) as view:
        con.execute(schema.INSERT_FILES_SQL.format(view=view))
    return ids


def _insert_chunks(con: duckdb.DuckDBPyConnection, files: Sequence[tuple[int, FileContent]]) -> list[int]:
    rows = [(file_id, content.language, chunk) for file_id, content in files for chunk in content.chunks]
    ids = _next_ids(con, schema.CHUNKS_ID_SEQUENCE, len(rows))
    if not ids:
        return []
    columns = {
        "id": np.array(ids, dtype=np.int32),
        "file_id": np.array([r[0] for r in rows], dtype=np.int32),
        "chunk_type": _strings(r[2].chunk_type for r in rows),
        "symbol": _strings(r[2].symbol for r in rows),
        "code": _strings(r[2].code for r in rows),
        "start_line": np.array([r[2].start_line for r in rows], dtype=np.int32),
        "end_line": np.array([r[2].end_line for r in rows], dtype=np.int32),
        "start_byte": np.array([r[2].start_byte for r in rows], dtype=np.int32),
        "end_byte": np.array([r[2].end_byte for r in rows], dtype=np.int32),
        "language": _strings(r[1] for r in rows),
    }
    with _view(con, "onetool_new_chunks", columns) as view:
        con.execute(schema.INSERT_CHUNKS_SQL.format(view=view))
    return ids


def _insert_vectors(
    con: duckdb.DuckDBPyConnection, chunk_ids: Sequence[int], vectors: np.ndarray, provider: str, model: str
) -> None:
    dims = int(vectors.shape[1])
    for statement in schema.embedding_ddl(dims):
        con.execute(statement)
    transposed = np.ascontiguousarray(vectors.astype(np.float32, copy=False).T)
    columns = {"chunk_id": np.array(chunk_ids, dtype=np.int32)} | {f"c{i}": transposed[i] for i in range(dims)}
    with _view(con, "onetool_new_vectors", columns) as view:
        con.execute(schema.insert_embeddings_sql(dims, view), [provider, model])


def _strings(values: Iterator[str | None] | Sequence[str | None]) -> np.ndarray:
    return np.array(list(values), dtype=object)


# -- sidecars ------------------------------------------------------------------------------------------------


def root_sidecar(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + schema.ROOT_SIDECAR_SUFFIX)


def embedding_sidecar(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + schema.EMBEDDING_SIDECAR_SUFFIX)


def check_root(project_root: Path, db_path: Path) -> None:
    """ChunkHound refuses to open an index whose root sidecar names another project: so do we, before writing."""
    sidecar = root_sidecar(db_path)
    if not sidecar.exists():
        return
    try:
        recorded = json.loads(read_regular(sidecar, SMALL_FILE)).get("indexed_root_path")
    except (OSError, ValueError, AttributeError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else exc
        raise IndexUnreadableError(f"Cannot read {sidecar}: {reason}") from exc
    if recorded and Path(str(recorded)).resolve() != project_root.resolve():
        raise OneToolCodeError(
            f"The index {db_path} belongs to another project: {sidecar.name} names {recorded}, not {project_root}. "
            f"ChunkHound would refuse it too. Delete {db_path} and its sidecars to re-index here, or choose "
            "another index location."
        )


def write_sidecars(project_root: Path, db_path: Path, embedding: tuple[str, str, int] | None) -> None:
    """Write the sidecars ChunkHound writes, in its exact bytes; an unchanged one is left untouched."""
    root_text = json.dumps({"version": _SIDECAR_VERSION, "indexed_root_path": str(project_root)})
    _write_if_changed(root_sidecar(db_path), root_text)
    if embedding is not None:
        provider, model, dims = embedding
        text = json.dumps({"version": _SIDECAR_VERSION, "provider": provider, "model": model, "dims": dims}) + "\n"
        _write_if_changed(embedding_sidecar(db_path), text)


def _write_if_changed(path: Path, text: str) -> None:
    """Replace ``path`` atomically (write beside it, then rename) unless it already holds ``text``."""
    try:
        if read_regular(path, SMALL_FILE).decode("utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass  # missing, unreadable or no file (a FIFO, say): (re)write it
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")  # permissions from the umask, as ChunkHound's files
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
