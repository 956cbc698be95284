"""A snapshot's vectors: semantic search at memory speed, with the answers of ChunkHound's own SQL.

It is part of a snapshot (``snapshot.py``): built once per state of the index file, saved as ``.npy`` files
and memory-mapped by every search on the machine, so no search holds the index ChunkHound writes.

How a search ranks (``database.semantic`` is the reference, and the answers must not change):

- candidates: one scan of the int8 copy of the L2-normalised vectors (``quantised.py``) bounds every row's
  cosine; the rows whose upper bound reaches the (offset + limit)-th best lower bound, less ``quantised.margin(dims)``
  (twice the worst-case float32 rounding error), are the only ones that can be on the page;
- order: those rows re-scored in float64 from their float32 rows, read by index from the mapped matrix, best
  upper bound first until no row left can reach the page (identical vectors get identical scores, so their tie
  is broken as the SQL breaks it), then sorted as the SQL sorts: similarity descending (NaN first and NULL last,
  as DuckDB orders them), then path, start line and chunk id;
- rows: the snapshot's rows of the page's chunks (``rows.ChunkRows``).

Hybrid's semantic list needs no exact order (it is fused by rank): in a large index it is ranked the same way among
a shortlist, the rows whose sign bits are nearest the query's (``quantised.shortlist``), whose codes are read by
index instead of scanned.

The one difference left: two *different* vectors whose cosines are equal in exact arithmetic may come out an
ulp apart, in either order, because DuckDB rounds in its own way (duckdb 1.5 and 2.0 already differ around the
8th digit); the SQL then orders them by path, the cache by that ulp. Scores agree within 1e-6 (2e-7 measured).

Filters are boolean masks over per-file attributes (language, DuckDB's own ``lower(path)``) and per-chunk types,
evaluated exactly as ``schema.filter_sql`` words them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from onetool_code.errors import IndexUnreadableError
from onetool_code.hits import FileRow
from onetool_code.index import database, quantised, spill, unit_rows
from onetool_code.index.attributes import Attributes
from onetool_code.index.store import heap
from onetool_code.schema import Filters

# What a saved cache holds as .npy files (bump snapshot.FORMAT when it changes).
ARRAYS = (
    "matrix", "codes", "signs", "scales", "residuals", "spans", "chunk_ids", "embedding_ids", "places", "digests", "start_lines", "nan_rows", "null_rows", "broken_rows",
)  # fmt: skip


@dataclass(frozen=True, eq=False)
class VectorCache:
    """One provider/model's vectors of one index, normalised, with what the filters and the tie-break need.

    Entry ``i`` of every per-row array (and of ``attributes``) describes column ``i`` of ``matrix``, or, past
    its rows, row ``i - rows`` of ``added``: a snapshot refreshed by a delta joins its base's vectors
    (the dead ones marked in ``attributes.alive``) and the delta's (``joined``).

    The float32 matrix is stored one row per vector: a search reads only its candidates' rows, a few pages
    each; the scan reads ``codes``, the int8 copy, a quarter of the bytes.
    """

    db_path: str  # for messages
    embedding_set: database.EmbeddingSet
    matrix: np.ndarray  # (rows, dims) float32, unit rows; zero rows for vectors that have no cosine (or
    # ``published.rows.RemoteRows``, rows read from a store while a published version's are not here yet)
    codes: np.ndarray  # (rows, dims) int8: ``quantised.encode`` of the matrix, and its per-row float64 terms
    signs: np.ndarray  # (rows, dims / 8) uint8: the matrix's sign bits (``quantised.signs``), for hybrid's shortlist
    scales: np.ndarray
    residuals: np.ndarray
    spans: np.ndarray
    chunk_ids: np.ndarray  # int64
    embedding_ids: np.ndarray  # int64, embeddings.id
    places: np.ndarray  # int64, the rows' rowids: DuckDB moves a row whose vector changes
    digests: np.ndarray  # uint64, ``unit_rows.digests`` of each vector as stored: what a moved row is compared by
    start_lines: np.ndarray  # int64, NULL as ``vector_reads.NULL_LINE``
    attributes: Attributes  # what the filters and the path tie-break read
    nan_rows: np.ndarray  # zero or non-finite vectors: DuckDB's cosine is NaN, which it sorts first
    null_rows: np.ndarray  # NULL vectors: the similarity is NULL, sorted last
    broken_rows: np.ndarray  # vectors holding NULL values: DuckDB's cosine raises on them
    build_seconds: float = 0.0
    added: np.ndarray | None = None  # (rows, dims) float32: the delta's rows, after the matrix's
    added_codes: np.ndarray | None = None  # (rows, dims) int8: their codes

    @property
    def nbytes(self) -> int:
        """Heap memory held: the arrays not mapped from a snapshot, plus the per-file and per-type strings."""
        arrays = [getattr(self, name) for name in ARRAYS]
        arrays += [a for a in (self.added, self.added_codes) if a is not None]
        return heap(*arrays) + self.attributes.nbytes

    def rank(
        self, vectors: np.ndarray, filters: Filters, limit: int, offset: int, *, exact: bool = True
    ) -> list[list[tuple[int, float]]]:
        """One page of (chunk id, similarity) per query vector, best first, exactly as ``database.semantic``; or,
        not ``exact``, in the order of the float32 product among a shortlist (``quantised.shortlist``: a hybrid
        search fuses ranks, and re-scoring its 400 candidates in float64 costs 3 ms at 109,000 x 1536)."""
        rows = self.attributes.rows(filters)
        self._check_broken(rows)
        units, scorable = unit_rows.units(vectors)
        return [self._page(units[i], bool(scorable[i]), rows, limit, offset, exact) for i in range(len(units))]

    def vector_of(self, chunk_id: int) -> np.ndarray | None:
        """The chunk's stored vector as a unit float32 row, or None when it has none here (no vector for this
        model, or a NULL one): what ``related`` ranks by, with no embeddings request."""
        columns = np.flatnonzero(self.chunk_ids == chunk_id)
        alive = self.attributes.alive
        if alive is not None:
            columns = columns[alive[columns]]
        columns = columns[~np.isin(columns, self.null_rows) & ~np.isin(columns, self.broken_rows)]
        if not columns.size:
            return None
        column, height = int(columns[-1]), self.matrix.shape[0]
        matrix = self.matrix if column < height else self.added
        assert matrix is not None
        return np.array(matrix[column - (0 if column < height else height)], dtype=np.float32)

    def prefetch(self, exact: bool) -> None:
        """Have the kernel read the mapped codes into the page cache, for a search about to scan all of them (or
        the sign bits, for a hybrid search that ranks among a shortlist: ``exact`` says it will not).

        A snapshot not searched for a while has left the page cache (on these VMs within about a minute), and
        the scan then faults it in from disk: 0.37 s more at 109,000 x 1536 float32 vectors. Asked for while the
        embeddings request runs, it is in memory by the time the scan starts (``posix_fadvise``: the kernel reads
        ahead on its own; pages already there cost nothing, and the process maps none of them).
        """
        shortlisting = not exact and quantised.shortlists(*self.codes.shape)
        for matrix in (self.signs if shortlisting else self.codes, self.added_codes):
            if matrix is not None:
                spill.read_ahead(matrix)

    def _check_broken(self, rows: np.ndarray | None) -> None:
        if not self.broken_rows.size:
            return
        hit = self.broken_rows if rows is None else self.broken_rows[np.isin(self.broken_rows, rows)]
        if hit.size:
            raise IndexUnreadableError(
                f"Cannot read the index {self.db_path}: the vector of chunk {int(self.chunk_ids[hit[0]])} "
                "holds NULL values, which ChunkHound's own query cannot score either (re-index the project)."
            )

    def _page(
        self,
        unit: np.ndarray,
        scorable: bool,
        rows: np.ndarray | None,
        limit: int,
        offset: int,
        exact: bool,
    ) -> list[tuple[int, float]]:
        """One query's page: bounds from the int8 scan pick the candidates, which are re-scored from float32 and
        sorted as the SQL does (``exact``: in float64; otherwise in float32, as a product of the matrix would)."""
        need = offset + limit
        size = self.chunk_ids.size if rows is None else rows.size
        if offset >= size:
            return []
        if not scorable:  # a zero query vector: DuckDB's cosine is NaN for every row, all tie
            candidates = np.arange(self.chunk_ids.size) if rows is None else rows
            similarities = np.zeros(candidates.size, dtype=np.float32)
        else:
            candidates, similarities = self._candidates(unit, rows, need, exact)
        kind = np.ones(candidates.size, dtype=np.int8)  # 0: NaN, 1: a number, 2: NULL (DuckDB's DESC order)
        kind[np.isin(candidates, self.nan_rows)] = 0
        if not scorable:
            kind[:] = 0
        kind[np.isin(candidates, self.null_rows)] = 2
        similarities[kind != 1] = 0.0
        order = np.lexsort(
            (
                self.chunk_ids[candidates],
                self.start_lines[candidates],
                self.attributes.file_codes[candidates],
                -similarities,
                kind,
            )
        )[offset:need]
        reported = {0: float("nan"), 2: 0.0}  # the SQL path's hit scores for NaN and NULL similarities
        return [(int(self.chunk_ids[candidates[i]]), reported.get(int(kind[i]), float(similarities[i]))) for i in order]

    def _candidates(
        self, unit: np.ndarray, rows: np.ndarray | None, need: int, exact: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows that may be on the page, each with its similarity; not ``exact``, among hybrid's shortlist."""
        shortlisted = None if exact else self._shortlist(unit, rows, need)
        if shortlisted is not None:
            rows, lower, upper = shortlisted
        else:
            parts = [self.codes] + ([] if self.added_codes is None else [self.added_codes])
            lower, upper = quantised.bounds(unit, parts, self.scales, self.residuals, self.spans)
            lower[self.nan_rows] = upper[self.nan_rows] = np.inf
            lower[self.null_rows] = upper[self.null_rows] = -np.inf
            if rows is not None:
                lower, upper = lower[rows], upper[rows]
        slack = quantised.margin(self.matrix.shape[1])
        if need < lower.size:
            kth = np.partition(lower, lower.size - need)[lower.size - need]
            picked = np.flatnonzero(upper >= kth - slack)
        else:
            picked = np.arange(lower.size)
        in_rows = picked if rows is None else rows[picked]
        nan, null = self.nan_rows, self.null_rows

        def keys(block: np.ndarray) -> np.ndarray:
            scores = self._exact(block, unit, exact).astype(np.float64)
            scores[np.isin(block, nan)] = np.inf
            scores[np.isin(block, null)] = -np.inf
            return scores

        candidates, scores = quantised.rescore_until_sure(in_rows, upper[picked], need, slack, keys)
        return candidates, scores.astype(np.float32)

    def _shortlist(
        self, unit: np.ndarray, rows: np.ndarray | None, need: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``quantised.shortlist`` of the base's rows the filters keep, with every kept row it cannot judge (the
        delta's, and those without a cosine, which the SQL sorts first or last), and their bounds from their
        codes read by index; None: every row is scanned."""
        height = self.codes.shape[0]
        found = quantised.shortlist(unit, self.signs, need, None if rows is None else rows[rows < height])
        if found is None:
            return None
        others = np.concatenate([self.nan_rows, self.null_rows, np.arange(height, self.chunk_ids.size)])
        pool = np.union1d(found, others if rows is None else others[np.isin(others, rows)])
        codes = [spill.rows_of(self.codes, pool[pool < height])]
        if self.added_codes is not None:
            codes.append(self.added_codes[pool[pool >= height] - height])
        lower, upper = quantised.bounds(unit, codes, self.scales[pool], self.residuals[pool], self.spans[pool])
        for held, bound in ((self.nan_rows, np.inf), (self.null_rows, -np.inf)):
            lower[np.isin(pool, held)] = upper[np.isin(pool, held)] = bound
        return pool, lower, upper

    def _exact(self, candidates: np.ndarray, unit: np.ndarray, exact: bool) -> np.ndarray:
        """Float32 similarities of a few rows read by index, computed in float64 row by row (``exact``) or as
        float32 products."""
        kind = np.float64 if exact else np.float32
        query = unit.astype(kind)
        out = np.empty(candidates.size, dtype=np.float32)
        height = self.matrix.shape[0]
        for matrix, part, shift in (
            (self.matrix, np.flatnonzero(candidates < height), 0),
            (self.added, np.flatnonzero(candidates >= height), height),
        ):
            if part.size:
                assert matrix is not None
                block = spill.rows_of(matrix, candidates[part] - shift).astype(kind, copy=False)
                out[part] = (block * query).sum(axis=1) if exact else block @ query
        return out

    def joined(self, alive: np.ndarray, delta: VectorCache, files: Sequence[FileRow]) -> VectorCache:
        """These vectors (``alive``: which are still in the index) and the delta's, numbered in ``files``."""
        every = np.ones(delta.chunk_ids.size, bool)
        columns = self.chunk_ids.size
        return dataclasses.replace(
            self,
            added=delta.matrix,
            added_codes=delta.codes,
            scales=np.concatenate([self.scales, delta.scales]),
            residuals=np.concatenate([self.residuals, delta.residuals]),
            spans=np.concatenate([self.spans, delta.spans]),
            chunk_ids=np.concatenate([self.chunk_ids, delta.chunk_ids]),
            embedding_ids=np.concatenate([self.embedding_ids, delta.embedding_ids]),
            places=np.concatenate([self.places, delta.places]),
            digests=np.concatenate([self.digests, delta.digests]),
            start_lines=np.concatenate([self.start_lines, delta.start_lines]),
            attributes=Attributes.joined(files, [(self.attributes, alive), (delta.attributes, every)]),
            nan_rows=np.concatenate([self.nan_rows, delta.nan_rows + columns]),
            null_rows=np.concatenate([self.null_rows, delta.null_rows + columns]),
            broken_rows=np.concatenate([self.broken_rows, delta.broken_rows + columns]),
            build_seconds=self.build_seconds + delta.build_seconds,
        )

    def delta(self, columns: int) -> VectorCache:
        """A joined cache's delta alone (the rows after the base's ``columns``), as a delta snapshot saves it."""
        assert self.added is not None
        part = slice(columns, None)
        files_of = self.attributes
        return dataclasses.replace(
            self,
            matrix=self.added,
            added=None,
            codes=self.added_codes,
            added_codes=None,
            signs=quantised.signs(self.added),
            scales=self.scales[part],
            residuals=self.residuals[part],
            spans=self.spans[part],
            chunk_ids=self.chunk_ids[part],
            embedding_ids=self.embedding_ids[part],
            places=self.places[part],
            digests=self.digests[part],
            start_lines=self.start_lines[part],
            attributes=dataclasses.replace(
                files_of, file_codes=files_of.file_codes[part], type_codes=files_of.type_codes[part], alive=None
            ),
            nan_rows=self.nan_rows[self.nan_rows >= columns] - columns,
            null_rows=self.null_rows[self.null_rows >= columns] - columns,
            broken_rows=self.broken_rows[self.broken_rows >= columns] - columns,
        )

    def save(self, into: Path) -> None:
        """Write the arrays (``np.save``: memory-mappable) and the rest as JSON into a folder of a snapshot."""
        for name in ARRAYS:
            spill.save(getattr(self, name), into / f"{name}.npy")
        self.attributes.save(into)
        meta = {"embedding_set": dataclasses.asdict(self.embedding_set), "build_seconds": self.build_seconds}
        (into / "vectors.json").write_text(json.dumps(meta), encoding="utf-8")


def load(folder: Path, db_path: Path) -> VectorCache:
    """A cache written by ``VectorCache.save``, its arrays memory-mapped: shared by every process on the machine."""
    meta = json.loads((folder / "vectors.json").read_text(encoding="utf-8"))
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS if name != "matrix"}
    return VectorCache(
        db_path=str(db_path),
        embedding_set=database.EmbeddingSet(**meta["embedding_set"]),
        attributes=Attributes.load(folder),
        build_seconds=float(meta["build_seconds"]),
        matrix=spill.matrix(folder, db_path, arrays["codes"].shape),
        **arrays,
    )
