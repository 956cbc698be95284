"""Snapshots: everything a search needs from one state of an index file, kept outside the project, so that
searches never hold the file ChunkHound writes (``live.py`` decides when and from where a state is read).

A state is read whole (a base: rows, every vector set, the lexical index), or, when a base of the same file is at
hand, as its difference from that base: the chunk ids and ``files`` rows of the state (small), then only the rows
and vectors the base does not hold. ChunkHound replaces a changed file's chunks and vectors with new ids and
rewrites its ``files`` row, and leaves every other file's ids alone, so a one-file change costs about what the
file costs. A delta snapshot is its base (mapped) with the base's dead rows masked, plus the delta's rows and
vectors after them; answers equal a full read's (semantic exactly; lexical within the bound ``lexical.py``
states). Deltas are always taken against the base, not chained: when one grows past ``MAX_DELTA_SHARE`` of the
base, or the lexical drift past ``MAX_DRIFT``, the state is read whole and becomes the new base.

On disk: one folder per state, ``snapshot.json`` written last (a folder without it is torn). A base holds
``rows/``, ``lexical/``, ``vectors-<i>/`` and ``files.json``; a delta names its base and holds ``files.json``,
``rows/`` (the delta's chunks), ``alive.npy`` (the base's live rows), and per vector set ``vectors-<i>/``
(the delta's vectors and the base's live ones).
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from onetool_code import progress, published, schema
from onetool_code.errors import DamagedError, IndexUnreadableError, SupersededError
from onetool_code.hits import FileRow
from onetool_code.index import database, lexical, lexical_process, rows, shapes, unit_rows, vector_cache, vector_reads
from onetool_code.index.store import Signature, cache_root, set_aside, spill_folder
from onetool_code.published import manifest
from onetool_code.spans import note

if TYPE_CHECKING:
    import duckdb


# Bump when what a snapshot folder holds changes (5: the lexical index's tokens are stems; 6: the vectors one
# float32 row each, beside their int8 codes; 7: the chunks' name keys; 8: the vectors' sign bits).
FORMAT = 8
# A delta larger than this share of its base's chunks (and than MIN_DELTA_CHUNKS) is read whole instead: the
# base's dead rows cost every search a little, and the delta is read again at each refresh.
MAX_DELTA_SHARE = 0.05
MIN_DELTA_CHUNKS = 2000
MAX_DRIFT = 0.01  # the lexical scores' bound (``lexical.LexicalIndex``): 1%
DIGEST_BLOCK = 256  # vectors whose digests are compared at a time
CHUNK_WINDOW = 16_384  # chunk ids a first read takes at a time (a window's code: a few MB)

Report = Callable[[str, int, int], None]  # (what is being read, done, total): ``progress.CHUNKS`` first


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One state of one index file: its layout and counts, its rows, its lexical index and every vector set."""

    db_path: Path
    folder: Path  # where it is published (or would have been, when the cache directory cannot be written)
    signature: Signature
    created: float  # when it was read, seconds since the epoch
    language_counts: tuple[tuple[str, int, int], ...]
    files: tuple[FileRow, ...]  # the index's file rows, in path order
    chunks: rows.ChunkRows
    vectors: dict[database.EmbeddingSet, vector_cache.VectorCache]  # in the layout's order
    read_seconds: float = 0.0  # how long the index file (or its private copy) was held open to make it
    copy_seconds: float = 0.0  # how long copying the file took, when a writer held it
    built_lexical: lexical.LexicalIndex | None = None  # when it was built here and could not be published
    base: Snapshot | None = None  # the base a delta snapshot joins
    delta: rows.ChunkRows | None = None  # a delta snapshot's own chunks
    digests: np.ndarray | None = None  # a base's: each chunk row's digest (``database.chunk_ids``), in row order

    @functools.cached_property
    def lexical_index(self) -> lexical.LexicalIndex:
        """Loaded at the first search that needs it: its vocabulary is the one part a load must parse (0.1 s at
        85,535 chunks), and ``status`` and semantic searches do without it. Everything else is mapped when the
        snapshot is loaded, and a mapping outlives the file's removal; this load does not."""
        if self.built_lexical is not None:
            return self.built_lexical
        if self.base is not None and self.delta is not None:
            return self.base.lexical_index.joined(self.delta, self.chunks.attributes, self.chunks.chunk_ids)
        try:
            return lexical.load(self.folder / "lexical", self.chunks)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
            if not (self.folder / "snapshot.json").exists():
                raise SupersededError(
                    f"the index {self.db_path} changed twice while this search ran; search again"
                ) from exc
            set_aside(self.folder)
            raise DamagedError(
                f"the snapshot {self.folder} of {self.db_path} is damaged ({exc}); it is made again"
            ) from exc

    @property
    def nbytes(self) -> int:
        held = self.chunks.nbytes + sum(v.nbytes for v in self.vectors.values())
        if "lexical_index" in self.__dict__:
            held += self.lexical_index.nbytes - self.chunks.attributes.nbytes  # the attributes are the rows'
        return held

    @property
    def embedding_sets(self) -> tuple[database.EmbeddingSet, ...]:
        return tuple(self.vectors)

    @property
    def layout(self) -> database.Layout:
        return database.Layout(self.db_path, self.embedding_sets)

    @property
    def delta_chunks(self) -> int:
        return 0 if self.delta is None else len(self.delta)

    def save(self, into: Path) -> None:
        meta = {
            "db_path": str(self.db_path),
            "signature": asdict(self.signature),
            "created": self.created,
            "read_seconds": self.read_seconds,
            "copy_seconds": self.copy_seconds,
            "embedding_sets": [asdict(s) for s in self.embedding_sets],
            "language_counts": self.language_counts,
            "base": None if self.base is None else self.base.folder.name,
            "format": FORMAT,
        }
        (into / "files.json").write_text(json.dumps([f.saved() for f in self.files]), encoding="utf-8")
        (into / "rows").mkdir()
        if self.base is None:
            assert self.digests is not None
            np.save(into / "digests.npy", self.digests)
            self.chunks.save(into / "rows")
            (into / "lexical").mkdir()
            lexical.save(self.lexical_index, into / "lexical")
            for i, embedding_set in enumerate(self.embedding_sets):
                (into / f"vectors-{i}").mkdir()
                self.vectors[embedding_set].save(into / f"vectors-{i}")
        else:
            assert self.delta is not None
            self.delta.save(into / "rows")
            np.save(into / "alive.npy", _alive(self.chunks.attributes.alive, len(self.base.chunks.chunk_ids)))
            for i, embedding_set in enumerate(self.embedding_sets):
                joined = self.vectors[embedding_set]
                base = self.base.vectors[same_set(self.base.embedding_sets, embedding_set)]
                columns = base.chunk_ids.size
                (into / f"vectors-{i}").mkdir()
                np.save(into / f"vectors-{i}" / "alive.npy", _alive(joined.attributes.alive, columns))
                assert joined.added is not None
                joined.delta(columns).save(into / f"vectors-{i}")
        # Every file's size, checked at each load: a file lost or cut short (a crash, a full disk) is noticed there.
        meta["manifest"] = {str(f.relative_to(into)): f.stat().st_size for f in into.rglob("*") if f.is_file()}
        (into / "snapshot.json").write_text(json.dumps(meta), encoding="utf-8")  # last: a folder without it is torn


def _alive(alive: np.ndarray | None, count: int) -> np.ndarray:
    return np.ones(count, bool) if alive is None else np.asarray(alive[:count])


def read_whole(
    con: duckdb.DuckDBPyConnection, db_path: Path, signature: Signature, target: Path, report: Report
) -> Finish:
    """Every row and vector of the state ``con`` reads; returns the step that makes the snapshot of them, to run
    once ``con`` is closed (it derives the lexical index, the long part, without holding the file)."""
    started = time.perf_counter()
    for statement in schema.FIRST_READ_LIMITS_SQL:
        con.execute(statement)
    layout = database.layout(con, db_path)
    files = database.file_rows(con)
    total, windows = database.chunk_windows(con, CHUNK_WINDOW)
    report(progress.CHUNKS, 0, total)
    spilled = spill_folder(target)
    try:
        (spilled / "rows").mkdir(parents=True)
        into: Path | None = spilled / "rows"
    except OSError:
        into = None  # a cache directory that cannot be written: the texts are held, as the vectors are then
    chunks = rows.built(files, windows, into, lambda done: report(progress.CHUNKS, done, total))
    pending = lexical_process.start(chunks, None if into is None else spilled, bool(layout.embedding_sets))
    try:
        _, _, digests = database.chunk_ids(con)
        vectors = {}
        for embedding_set in layout.embedding_sets:
            label = f"vectors of {embedding_set.model}"
            report(label, 0, embedding_set.count)
            vectors[embedding_set] = vector_reads.build(
                con,
                db_path,
                embedding_set,
                files,
                lambda done, total, label=label: report(label, done, total),
                spilled,
            )
    except BaseException:
        pending.cancel()
        raise
    held = time.perf_counter() - started

    def finish() -> Snapshot:
        report("lexical index", 0, total)
        return _made(
            db_path,
            target,
            signature,
            files,
            chunks,
            vectors,
            held,
            built_lexical=pending.result(),
            digests=digests,
        )

    return Finish(finish, pending.cancel)


class Finish:
    """What is left of a whole read once its connection is closed: called, it waits for the lexical index (built
    meanwhile, maybe by a child process) and makes the snapshot; ``cancel`` stops that build, for a read that
    fails before or while finishing (a no-op once it has finished)."""

    def __init__(self, make: Callable[[], Snapshot], cancel: Callable[[], object]) -> None:
        self._make, self.cancel = make, cancel

    def __call__(self) -> Snapshot:
        try:
            return self._make()
        except BaseException:
            self.cancel()
            raise


def _made(
    db_path: Path,
    target: Path,
    signature: Signature,
    files: Sequence[FileRow],
    chunks: rows.ChunkRows,
    vectors: dict[database.EmbeddingSet, vector_cache.VectorCache],
    held: float,
    **parts: object,
) -> Snapshot:
    """A snapshot read now; ``parts``: what a whole read or a delta adds."""
    return Snapshot(
        db_path=db_path,
        folder=target,
        signature=signature,
        created=time.time(),
        language_counts=rows.language_counts(files),
        files=tuple(files),
        chunks=chunks,
        vectors=vectors,
        read_seconds=held,
        **parts,  # type: ignore[arg-type]
    )


def read_delta(
    con: duckdb.DuckDBPyConnection, db_path: Path, signature: Signature, target: Path, base: Snapshot
) -> Snapshot | None:
    """The state ``con`` reads, as its difference from ``base`` (a base snapshot of the same file); None when it
    is better read whole (another set of vector sets, a delta too large, the lexical drift past its bound)."""
    assert base.base is None
    started = time.perf_counter()
    layout = database.layout(con, db_path)
    kinds = {(s.provider, s.model, s.dims) for s in layout.embedding_sets}
    if kinds != {(s.provider, s.model, s.dims) for s in base.embedding_sets}:
        return None
    files = database.file_rows(con)
    ids, file_ids, digests = database.chunk_ids(con)
    alive = _live_rows(base, files, ids, file_ids, digests)
    added = np.setdiff1d(ids, base.chunks.chunk_ids[alive], assume_unique=True)
    if added.size > max(MIN_DELTA_CHUNKS, MAX_DELTA_SHARE * len(base.chunks)):
        return None
    delta = rows.build(files, database.chunk_rows(con, added))
    live_chunks = base.chunks.chunk_ids[alive]
    vectors = {}
    for embedding_set in layout.embedding_sets:
        held = base.vectors[same_set(base.embedding_sets, embedding_set)]
        unchanged, present = _live_vectors(con, held, embedding_set)
        live = unchanged & np.isin(held.chunk_ids, live_chunks)
        new = np.setdiff1d(present, held.embedding_ids[live], assume_unique=True)
        vectors[embedding_set] = held.joined(
            live, vector_reads.build_of(con, db_path, embedding_set, files, new), files
        )
    chunks = base.chunks.joined(alive, delta, files)
    made = _made(
        db_path, target, signature, files, chunks, vectors, time.perf_counter() - started, base=base, delta=delta
    )
    return made if abs(made.lexical_index.drift) <= MAX_DRIFT else None


def _live_vectors(
    con: duckdb.DuckDBPyConnection, held: vector_cache.VectorCache, embedding_set: database.EmbeddingSet
) -> tuple[np.ndarray, np.ndarray]:
    """Which of the base's vectors the state still holds unchanged, and every vector id it holds.

    A vector is unchanged when its id is at the same rowid: DuckDB moves a row whose vector is updated (an
    UPDATE, ChunkHound's upsert of a re-embedded chunk) to the table's end. A few moved rows are compared by
    their digests. When most rows moved, a compaction renumbered the table (``chunkhound index`` ends with one),
    keeping the rows' order; a row updated in place then still comes after every unchanged row, so the unchanged
    ones are the longest run, from the start, that keeps the base's order: rows past it changed, and the run's
    last rows are compared by digest, block by block from its end, until a block is found unchanged (0.8 s per
    80,000 vectors for every digest, against a few milliseconds for one block).
    """
    ids, places, _ = database.embedding_ids(con, embedding_set)
    by_id = np.argsort(ids)
    where = by_id[np.clip(np.searchsorted(ids, held.embedding_ids, sorter=by_id), 0, max(ids.size - 1, 0))]
    present = (ids[where] == held.embedding_ids) if ids.size else np.zeros(held.embedding_ids.size, bool)
    now = places[where]
    still = present & (now == held.places)
    moved = np.flatnonzero(present & ~still)
    if moved.size <= max(DIGEST_BLOCK, MAX_DELTA_SHARE * held.embedding_ids.size):
        still[moved[_same_digests(con, held, embedding_set, moved)]] = True
        return still, ids
    common = np.flatnonzero(present)
    order = common[np.argsort(now[common], kind="stable")]  # the base's rows in the state's order
    breaks = np.flatnonzero(np.diff(held.places[order]) <= 0)
    run = int(breaks[0]) + 1 if breaks.size else order.size
    still[order[:run]] = True
    for end in range(run, 0, -DIGEST_BLOCK):
        block = order[max(0, end - DIGEST_BLOCK) : end]
        same = _same_digests(con, held, embedding_set, block)
        still[block[~same]] = False
        if same.all():
            break
    return still, ids


def _same_digests(
    con: duckdb.DuckDBPyConnection,
    held: vector_cache.VectorCache,
    embedding_set: database.EmbeddingSet,
    rows: np.ndarray,
) -> np.ndarray:
    """Whether each of these base rows' vectors has the digest it had."""
    if not rows.size:
        return np.zeros(0, bool)
    columns = database.embeddings_by_id(con, embedding_set, held.embedding_ids[rows])
    block = np.empty((len(columns["id"]), embedding_set.dims), dtype=np.float32)
    stored = unit_rows.digests(block, *unit_rows.copied(block, columns["embedding"]))
    now = dict(zip(np.ma.getdata(columns["id"]).tolist(), stored.tolist(), strict=True))
    pairs = zip(held.embedding_ids[rows].tolist(), held.digests[rows].tolist(), strict=True)
    return np.fromiter((now.get(i) == d for i, d in pairs), bool, rows.size)


def same_set(sets: Sequence[database.EmbeddingSet], wanted: database.EmbeddingSet) -> database.EmbeddingSet:
    return next(s for s in sets if (s.provider, s.model, s.dims) == (wanted.provider, wanted.model, wanted.dims))


def _live_rows(
    base: Snapshot, files: Sequence[FileRow], ids: np.ndarray, file_ids: np.ndarray, digests: np.ndarray
) -> np.ndarray:
    """Which of the base's chunk rows the state still holds as they were: the chunk id is there, in the same
    file, with the same digest, and that file's row is unchanged (ChunkHound rewrites a changed file's row and
    its chunks)."""
    now = {f.path: (f.file_id, f.language, f.state) for f in files}
    base_file_ids = np.fromiter((f.file_id for f in base.files), np.int64, len(base.files))
    kept = np.fromiter((now.get(f.path) == (f.file_id, f.language, f.state) for f in base.files), bool, len(base.files))
    codes = np.asarray(base.chunks.attributes.file_codes)
    row_files = base_file_ids[codes] if codes.size else np.zeros(0, np.int64)
    chunk_ids = np.asarray(base.chunks.chunk_ids)
    where = np.clip(np.searchsorted(ids, chunk_ids), 0, max(ids.size - 1, 0))
    present = (ids[where] == chunk_ids) if ids.size else np.zeros(chunk_ids.size, bool)
    assert base.digests is not None
    same_file = present & (file_ids[where] == row_files) & (digests[where] == base.digests) if ids.size else present
    return same_file & (kept[codes] if codes.size else np.zeros(0, bool))


def load(target: Path, db_path: Path, bases: Callable[[Path], Snapshot | None]) -> Snapshot | None:
    """A published snapshot, its arrays memory-mapped; None when there is none (or it is torn or foreign, or its
    delta's base is gone). ``bases`` finds a delta's base by its folder. A snapshot whose files are not what was
    written, or whose arrays disagree in their rows (``shapes``), is set aside (``DamagedError``'s rule), so
    that it is made again, once, rather than read whole forever; a published version's refuses the version."""
    try:
        meta = json.loads((target / "snapshot.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("db_path") != str(db_path) or meta.get("format") != FORMAT:
            return None  # another file's, or another version's (a refresh's base is looked for among all)
        return _loaded(target, db_path, meta, bases)
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        if (target / "snapshot.json").exists():  # published, and whole when it was
            set_aside(target)
            if isinstance(exc, shapes.Disagreement):
                _refuse_published(db_path, exc)
            note(f"the snapshot {target} is damaged ({exc}): set aside, to be made again")
        return None


def _refuse_published(db_path: Path, exc: shapes.Disagreement) -> None:
    """A fetched version's snapshot is its publisher's (``shipped.adopt``): one whose arrays disagree refuses the
    version, as an object that fails its sha256 does (``published.download``), rather than answer wrongly."""
    origin = published.fetched(db_path, cache_root())
    if origin is not None:
        raise IndexUnreadableError(
            f"version {origin.version} of {origin.url} is refused: its snapshot's arrays disagree ({exc}); the "
            "version is not used (publish the index again)"
        )


def _loaded(target: Path, db_path: Path, meta: dict, bases: Callable[[Path], Snapshot | None]) -> Snapshot | None:
    for name, size in meta["manifest"].items():
        if not (target / name).exists() and (target / (name + manifest.BLOCKS)).exists():
            continue  # float32 rows a published version left in its store, read from it meanwhile (``spill.matrix``)
        if (target / name).stat().st_size != size:
            raise ValueError(f"{name} is {(target / name).stat().st_size} bytes, not {size}")
    files = tuple(map(FileRow.loaded, json.loads((target / "files.json").read_text(encoding="utf-8"))))
    sets = tuple(database.EmbeddingSet(**s) for s in meta["embedding_sets"])
    fields = {
        "db_path": db_path,
        "folder": target,
        "signature": Signature.recorded(meta["signature"]),
        "created": float(meta["created"]),
        "language_counts": tuple(tuple(c) for c in meta["language_counts"]),
        "files": files,
        "read_seconds": float(meta["read_seconds"]),
        "copy_seconds": float(meta["copy_seconds"]),
    }
    chunks = rows.ChunkRows.load(target / "rows")
    count = shapes.chunk_rows(chunks, "rows")
    loaded = {s: vector_cache.load(target / f"vectors-{i}", db_path) for i, s in enumerate(sets)}
    for i, s in enumerate(sets):
        shapes.vectors(loaded[s], f"vectors-{i}", s.dims)
    if meta["base"] is None:
        digests = np.load(target / "digests.npy", mmap_mode="r")
        shapes.same_rows(count, "rows/chunk_ids.npy", {"digests.npy": digests})
        shapes.lexical(target / "lexical", count)
        return Snapshot(chunks=chunks, vectors=loaded, digests=digests, **fields)  # type: ignore[arg-type]
    base = bases(target.with_name(meta["base"]))
    if base is None:
        return None
    alive = np.load(target / "alive.npy")
    shapes.same_rows(base.chunks.chunk_ids.size, "the base's rows/chunk_ids.npy", {"alive.npy": alive})
    vectors = {}
    for i, s in enumerate(sets):
        held = base.vectors[same_set(base.embedding_sets, s)]
        live = {f"vectors-{i}/alive.npy": np.load(target / f"vectors-{i}" / "alive.npy")}
        shapes.same_rows(held.chunk_ids.size, f"the base's vectors of {s.model}", live)
        vectors[s] = held.joined(live[f"vectors-{i}/alive.npy"], loaded[s], files)
    joined = base.chunks.joined(alive, chunks, files)
    return Snapshot(chunks=joined, vectors=vectors, base=base, delta=chunks, **fields)  # type: ignore[arg-type]
