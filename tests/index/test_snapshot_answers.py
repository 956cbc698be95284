"""A snapshot's vectors answer exactly as ChunkHound's SQL path does; a snapshot notices a changed index.

Real DuckDB files with ChunkHound's DDL from ``schema.py``: a small index of the sample project (vectors from
the test server's function, so the library can be driven end to end) and a generated index of 50,000 chunks
with clusters, exact duplicates (ties), zero and NULL vectors, a second model and orphan vectors.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import settled
from openai_server import vector_for

import onetool_code
from onetool_code import schema
from onetool_code.errors import IndexUnreadableError
from onetool_code.hits import Hit
from onetool_code.index import database, live, quantised, store
from onetool_code.index.store import STORE
from onetool_code.schema import Filters

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "project"
TOLERANCE = 1e-5

# -- Building indexes with ChunkHound's DDL -------------------------------------------------------------------

LANGUAGE_OF = {
    ".py": "python", ".ts": "typescript", ".tsx": "tsx", ".js": "javascript", ".go": "go", ".rs": "rust",
    ".java": "java", ".md": "markdown", ".toml": "toml",
}  # fmt: skip


def write_index(
    db: Path,
    files: Sequence[tuple[int, str, str | None]],
    chunks: dict[str, np.ndarray],
    embeddings: Sequence[tuple[str, str, np.ndarray, np.ndarray]],
    after: Sequence[str] = (),
) -> None:
    """A fresh index file: ``files`` as (id, path, language); ``chunks`` as numpy columns (id, file_id,
    chunk_type, symbol, code, start_line, end_line); ``embeddings`` as (provider, model, chunk_ids, vectors),
    where a vector row may be None (a NULL embedding); then the statements ``after``."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(db))
    try:
        for statement in schema.SCHEMA_DDL:
            con.execute(statement)
        con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", list(schema.SCHEMA_VERSION_ROW))
        paths = np.array([f[1] for f in files], dtype=object)
        con.register(
            "new_files",
            {
                "id": np.array([f[0] for f in files], dtype=np.int32),
                "path": paths,
                "name": np.array([p.rsplit("/", 1)[-1] for p in paths], dtype=object),
                "language": np.array([f[2] for f in files], dtype=object),
            },
        )
        con.execute("INSERT INTO files (id, path, name, language) SELECT id, path, name, language FROM new_files")
        con.register("new_chunks", chunks)
        con.execute(
            "INSERT INTO chunks (id, file_id, chunk_type, symbol, code, start_line, end_line, language) "
            "SELECT c.id, c.file_id, c.chunk_type, c.symbol, c.code, c.start_line, c.end_line, f.language "
            "FROM new_chunks c LEFT JOIN files f ON f.id = c.file_id"
        )
        for dims in sorted({_dims(vectors) for _, _, _, vectors in embeddings}):
            for statement in schema.embedding_ddl(dims):
                con.execute(statement)
        for provider, model, chunk_ids, vectors in embeddings:
            dims = _dims(vectors)
            column = np.empty(len(vectors), dtype=object)
            column[:] = list(vectors)
            con.register("new_vectors", {"chunk_id": chunk_ids.astype(np.int32), "v": column})
            con.execute(
                f"INSERT INTO {schema.embedding_table(dims)} (chunk_id, provider, model, embedding, dims) "
                f"SELECT chunk_id, ?, ?, v::FLOAT[{dims}], {dims} FROM new_vectors",
                [provider, model],
            )
        for statement in after:
            con.execute(statement)
    finally:
        con.close()
    settled(db)


def _dims(vectors: np.ndarray) -> int:
    """Vector size of a float matrix, or of an object array of rows some of which are None."""
    if vectors.dtype != object:
        return int(vectors.shape[1])
    return len(next(v for v in vectors if v is not None))


def sample_chunks(root: Path) -> tuple[list[tuple[int, str, str | None]], dict[str, np.ndarray]]:
    """The sample project cut into 12-line chunks; a chunk's type comes from its first line."""
    files: list[tuple[int, str, str | None]] = []
    rows: list[tuple[int, int, str, str, str, int, int]] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in LANGUAGE_OF):
        rel = path.relative_to(root).as_posix()
        files.append((len(files) + 1, rel, LANGUAGE_OF[path.suffix]))
        lines = path.read_text(encoding="utf-8").splitlines()
        for start in range(0, len(lines), 12):
            code = "\n".join(lines[start : start + 12])
            if not code.strip():
                continue
            head = code.strip().split(None, 1)[0]
            kind = {"def": "function", "func": "function", "fn": "function", "class": "class"}.get(head, "block")
            rows.append((len(rows) + 1, len(files), kind, head, code, start + 1, min(len(lines), start + 12)))
    columns = list(zip(*rows, strict=True))
    chunks = {
        "id": np.array(columns[0], dtype=np.int32),
        "file_id": np.array(columns[1], dtype=np.int32),
        "chunk_type": np.array(columns[2], dtype=object),
        "symbol": np.array(columns[3], dtype=object),
        "code": np.array(columns[4], dtype=object),
        "start_line": np.array(columns[5], dtype=np.int32),
        "end_line": np.array(columns[6], dtype=np.int32),
    }
    return files, chunks


def index_sample(root: Path, dims: int = 1536) -> Path:
    """Index the project at ``root`` with vectors from the test server's function (so queries score exactly)."""
    files, chunks = sample_chunks(root)
    vectors = np.stack([vector_for(code, dims) for code in chunks["code"]])
    db = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    write_index(db, files, chunks, [("openai", "text-embedding-3-small", chunks["id"], vectors)])
    return db


GENERATED_CHUNKS = 50_000
GENERATED_DIMS = 384  # a real model size; 1536 dims only slow the SQL side of each comparison (see bench/)
GENERATED_MODEL = ("openai", "bench-384")
TOPS = ("src", "tests", "web", "docs", "vendor", "Services/Auth")
EXTENSIONS = (".py", ".ts", ".go", ".rs", ".md")
TYPES = ("function", "method", "class", "comment", "variable")


@dataclasses.dataclass(frozen=True)
class Generated:
    db: Path
    root: Path
    centers: np.ndarray
    vectors: np.ndarray


def generate(root: Path, chunks: int = GENERATED_CHUNKS, dims: int = GENERATED_DIMS, seed: int = 7) -> Generated:
    """A large index in a few seconds: clustered vectors (so rankings are meaningful), every 37th vector a copy
    of its neighbour (exact ties), zero vectors (NaN cosine) and NULL vectors, NULL start lines, a second model
    in the same table, and vectors whose chunk no longer exists."""
    rng = np.random.default_rng(seed)
    n_files = chunks // 20
    files = []
    for i in range(n_files):
        ext = EXTENSIONS[i % len(EXTENSIONS)]
        files.append((i + 1, f"{TOPS[i % len(TOPS)]}/pkg{i % 17}/Module{i}{ext}", LANGUAGE_OF[ext]))
    file_ids = rng.integers(1, n_files + 1, chunks).astype(np.int32)
    starts = rng.integers(1, 400, chunks).astype(np.int32)
    ids = np.arange(1, chunks + 1, dtype=np.int32)
    chunk_columns = {
        "id": ids,
        "file_id": file_ids,
        "chunk_type": np.array([TYPES[i] for i in rng.integers(0, len(TYPES), chunks)], dtype=object),
        "symbol": np.array([f"sym{i}" for i in ids], dtype=object),
        "code": np.array([f"def sym{i}():\n    return {i}" for i in ids], dtype=object),
        "start_line": starts,
        "end_line": starts + 5,
    }
    centers = rng.standard_normal((40, dims)).astype(np.float32)
    vectors = centers[rng.integers(0, 40, chunks)] + 0.7 * rng.standard_normal((chunks, dims), dtype=np.float32)
    vectors[36::37] = vectors[35::37][: len(vectors[36::37])]
    vectors[[500, 40_500]] = 0.0
    rows = np.empty(chunks, dtype=object)
    rows[:] = list(vectors)
    rows[[700, 20_700, 40_700]] = None
    other = rng.standard_normal((1000, dims)).astype(np.float32)
    orphans = rng.standard_normal((200, dims)).astype(np.float32)
    db = root / "generated.db"
    write_index(
        db,
        files,
        chunk_columns,
        [
            (*GENERATED_MODEL, ids, rows),
            ("openai", "other-384", ids[:1000], other),
            (*GENERATED_MODEL, np.arange(chunks + 1, chunks + 201), orphans),
        ],
        after=["UPDATE chunks SET start_line = NULL WHERE id % 997 = 0"],
    )
    return Generated(db, root, centers, vectors)


# -- Comparing the two paths -----------------------------------------------------------------------------------


def assert_same_hits(cached: Sequence[Hit], sql: Sequence[Hit], around: Sequence[float] = ()) -> None:
    """Same hits in the same order; scores within 1e-5. Only hits with equal scores (within 1e-5) may trade
    places: DuckDB's float32 rounding is its own (and differs between its versions), so two different vectors
    with the same cosine may score an ulp apart on either side. Identical vectors tie exactly on both sides,
    and ``test_exact_ties_follow_the_sql_tie_break`` holds those to the SQL's order.
    ``around``: the SQL's scores just before and just after the page, where a tie may cross its edges."""
    assert len(cached) == len(sql)
    scores = [h.score for h in sql]
    for i, (ours, theirs) in enumerate(zip(cached, sql, strict=True)):
        if math.isnan(theirs.score):
            assert math.isnan(ours.score)
        else:
            assert abs(ours.score - theirs.score) <= TOLERANCE, (i, ours, theirs)
        if ours.chunk_id != theirs.chunk_id:
            others = [s for j, s in enumerate(scores) if j != i] + list(around)
            assert any(abs(s - theirs.score) <= TOLERANCE for s in others), (
                f"position {i}: {ours.chunk_id} instead of {theirs.chunk_id} without a tie"
            )
        else:
            assert dataclasses.replace(ours, score=0.0) == dataclasses.replace(theirs, score=0.0)


def ranked_by_snapshot(
    db: Path,
    embedding_set: database.EmbeddingSet,
    queries: np.ndarray,
    filters: Filters,
    limit: int,
    offset: int,
    exact: bool = True,
) -> list[list[Hit]]:
    """The snapshot's semantic ranking, as hits without their file state (the SQL path's hits have none)."""
    held = live.view(db.parent, db).snapshot
    pages = held.vectors[embedding_set].rank(queries, filters, limit, offset, exact=exact)
    return [[dataclasses.replace(h, file=None) for h in held.chunks.hits(page)] for page in pages]


def compare(
    db: Path,
    embedding_set: database.EmbeddingSet,
    queries: np.ndarray,
    filters: Filters,
    limit: int,
    offset: int,
    exact: bool = True,
) -> int:
    """The snapshot against the SQL, the queries as one batch; returns the hits compared. Not ``exact`` (the order
    a hybrid search reads), hits may trade places only where their similarities tie within ``TOLERANCE``."""
    seen = 0
    before = 1 if offset else 0
    cached = ranked_by_snapshot(db, embedding_set, queries, filters, limit, offset, exact)
    with database.connect(db.parent, db) as con:
        sql = database.semantic(con, embedding_set, queries, filters, before + limit + 1, offset - before)
    for ours, theirs in zip(cached, sql, strict=True):
        page = theirs[before : before + limit]
        around = [h.score for h in theirs[:before] + theirs[before + limit :]]
        assert_same_hits(ours, page, around)
        seen += len(ours)
    return seen


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("module-cache")


@pytest.fixture(autouse=True)
def one_cache_directory(monkeypatch, module_cache):
    """The generated index's snapshot (tens of MB) is made once for this module, as one machine would."""
    monkeypatch.setenv(store.CACHE_ENV, str(module_cache))


@pytest.fixture
def cold():
    """A process that has not searched yet."""
    STORE.clear()


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Generated:
    return generate(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="session")
def generated_set(generated) -> database.EmbeddingSet:
    with database.connect(generated.root, generated.db) as con:
        sets = database.layout(con, generated.db).embedding_sets
    return next(s for s in sets if (s.provider, s.model) == GENERATED_MODEL)


@pytest.fixture(scope="session")
def queries(generated) -> np.ndarray:
    """Near cluster centres, copies of stored vectors (exact ties at the top), a random and a negated one."""
    rng = np.random.default_rng(11)
    dims = generated.vectors.shape[1]
    near = generated.centers[:4] + 0.3 * rng.standard_normal((4, dims)).astype(np.float32)
    stored = generated.vectors[[35, 36, 1234]]
    return np.vstack([near, stored, rng.standard_normal((1, dims)), -generated.centers[5:6]]).astype(np.float32)


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cached-sample") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    return index_sample(root)


# Each filter off or with two values (an OR inside the filter); single values have their own test.
FILTER_VALUES = {
    "languages": [(), ("typescript", "go")],
    "chunk_types": [(), ("class", "comment")],
    "include": [(), ("services/auth", "module1")],
    "exclude": [(), ("vendor", "9.")],
}


# -- The generated 50,000-chunk index ----------------------------------------------------------------------------


def test_generated_index_is_large_and_has_the_hard_cases(cold, generated, generated_set):
    assert generated_set.count == GENERATED_CHUNKS + 200
    built = live.view(generated.root, generated.db).snapshot.vectors[generated_set]
    assert built.matrix.shape == (GENERATED_CHUNKS, GENERATED_DIMS)  # orphans out, as the SQL join leaves them out
    assert built.nan_rows.size == 2 and built.null_rows.size == 3
    assert (built.start_lines == np.iinfo(np.int64).max).sum() == GENERATED_CHUNKS // 997


@pytest.mark.parametrize("combination", list(itertools.product(*FILTER_VALUES.values())), ids=str)
def test_every_filter_combination_matches_sql(generated, generated_set, queries, combination):
    filters = Filters(*combination)
    compare(generated.db, generated_set, queries[[0, 7]], filters, 11, 0)


def test_single_filter_values_match_sql(generated, generated_set, queries):
    for filters in (
        Filters(languages=("python",)),
        Filters(chunk_types=("function",)),
        Filters(include=("pkg3",)),
        Filters(exclude=("tests",)),
    ):
        compare(generated.db, generated_set, queries[[4]], filters, 11, 0)


@pytest.mark.parametrize("offset", [1, 7, 50, 333, 49_990, 60_000])
def test_offsets_match_sql(generated, generated_set, queries, offset):
    compare(generated.db, generated_set, queries[[1, 5]], Filters(), 11, offset)
    compare(generated.db, generated_set, queries[[2]], Filters(languages=("rust",), exclude=("pkg1",)), 11, offset)


def test_many_queries_and_a_batch_match_sql(generated, generated_set, queries):
    rng = np.random.default_rng(3)
    more = generated.vectors[rng.integers(0, GENERATED_CHUNKS, 4)] + rng.standard_normal((4, queries.shape[1])).astype(
        np.float32
    )
    seen = compare(generated.db, generated_set, np.vstack([queries, more]), Filters(), 10, 0)
    assert seen == 10 * (len(queries) + 4)


@pytest.mark.parametrize(
    "filters", [Filters(), Filters(languages=("python",)), Filters(exclude=("tests",))], ids=["none", "lang", "path"]
)
def test_hybrids_shortlist_answers_as_the_sql_for_queries_near_the_data(
    generated, generated_set, queries, filters, monkeypatch
):
    """A large index ranks hybrid's list among the rows nearest the query by sign bits, reading only their codes:
    on clustered vectors with zero, NULL and tied ones, under filters, the pages are still the SQL's. (Not for a
    random direction, whose best cosines are all near zero: the shortlist is a filter, not a bound.)"""
    monkeypatch.setattr(quantised, "SHORTLIST_FROM", 1000)
    monkeypatch.setattr(quantised, "SHORTLIST_DIMS", 384)
    scanned = []
    bounds = quantised.bounds

    def counted(unit, parts, *rest):
        scanned.append(sum(part.shape[0] for part in parts))
        return bounds(unit, parts, *rest)

    monkeypatch.setattr(quantised, "bounds", counted)
    near = queries[:7]  # near cluster centres, and stored vectors (ties at the top)
    assert compare(generated.db, generated_set, near, filters, 50, 0, exact=False) > 0
    assert scanned and max(scanned) < GENERATED_CHUNKS // 4
    scanned.clear()
    compare(generated.db, generated_set, near, filters, 50, 0, exact=True)  # semantic mode scans every row
    assert min(scanned) >= GENERATED_CHUNKS


def test_exact_ties_follow_the_sql_tie_break(generated, generated_set):
    """Rows 35 and 36 hold the same vector: the SQL orders them by path, start line, id, and so must we.
    (Offset 2: the two zero vectors come first, their cosine being NaN.)"""
    query = generated.vectors[35:36]
    ours = ranked_by_snapshot(generated.db, generated_set, query, Filters(), 5, 2)[0]
    with database.connect(generated.root, generated.db) as con:
        theirs = database.semantic(con, generated_set, query, Filters(), 5, 2)[0]
    assert ours[0].score == pytest.approx(1.0, abs=1e-6) and ours[1].score == ours[0].score
    assert [h.chunk_id for h in ours[:2]] == [h.chunk_id for h in theirs[:2]]
    assert {h.chunk_id for h in ours[:2]} == {36, 37}


def test_zero_query_vector_ranks_like_duckdb(generated, generated_set):
    """Every cosine is NaN: DuckDB then orders by the tie-break alone."""
    zero = np.zeros((1, GENERATED_DIMS), dtype=np.float32)
    compare(generated.db, generated_set, zero, Filters(), 11, 0)
    compare(generated.db, generated_set, zero, Filters(chunk_types=("class",)), 11, 20)


def test_nan_and_null_vectors_sort_where_duckdb_sorts_them(generated, generated_set, queries):
    """Zero vectors (NaN) come first and NULL vectors last: pages at both ends match."""
    compare(generated.db, generated_set, queries[:2], Filters(), 8, 0)
    compare(generated.db, generated_set, queries[:2], Filters(), 11, GENERATED_CHUNKS - 8)


def test_the_order_hybrid_reads_is_the_sqls_but_for_float32_ties(generated, generated_set, queries):
    """Hybrid fuses ranks, so it skips re-scoring its candidates in float64: what it reads is still ChunkHound's
    order, NaN and NULL vectors and filters included, save for neighbours whose similarities tie in float32."""
    zero = np.zeros((1, GENERATED_DIMS), dtype=np.float32)
    compare(generated.db, generated_set, queries, Filters(), 400, 0, exact=False)
    compare(generated.db, generated_set, queries[[2]], Filters(languages=("rust",), exclude=("pkg1",)), 50, 0, False)
    compare(generated.db, generated_set, zero, Filters(chunk_types=("class",)), 11, 20, exact=False)
    compare(generated.db, generated_set, queries[:2], Filters(), 11, GENERATED_CHUNKS - 8, exact=False)


def test_a_mapped_snapshot_costs_the_process_little_memory(cold, generated, generated_set):
    """The matrix and the rows are the page cache's, shared by every process: the heap holds strings only."""
    live.view(generated.root, generated.db)  # made (or found) on disk
    STORE.clear()
    tracemalloc.start()
    try:
        held = live.view(generated.root, generated.db).snapshot
        ranked_by_snapshot(generated.db, generated_set, generated.vectors[:3], Filters(), 10, 0)
        heap, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    matrix = GENERATED_CHUNKS * GENERATED_DIMS * 4
    assert held.vectors[generated_set].matrix.nbytes == matrix
    assert isinstance(held.vectors[generated_set].matrix, np.memmap)
    assert heap <= 0.05 * matrix and STORE.nbytes() <= 0.05 * matrix


def test_concurrent_searches_of_a_cold_index_make_one_snapshot(
    generated, generated_set, queries, tmp_path, monkeypatch
):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "cold-cache"))
    STORE.clear()
    with database.connect(generated.root, generated.db) as con:
        expected = database.semantic(con, generated_set, queries, Filters(), 10, 0)
    results: list[list[list[Hit]]] = []
    errors: list[BaseException] = []

    def search() -> None:
        try:
            results.append(ranked_by_snapshot(generated.db, generated_set, queries, Filters(), 10, 0))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 3 and STORE.builds == 1
    for result in results:
        for ours, theirs in zip(result, expected, strict=True):
            assert_same_hits(ours, theirs)


# -- Small hand-made indexes -----------------------------------------------------------------------------------


def tiny_index(db: Path, vectors: list[list[float] | None], languages: Sequence[str] | None = None) -> None:
    n = len(vectors)
    languages = languages or ["python"] * n
    files = [(i + 1, f"pkg/file{i}.py", languages[i]) for i in range(n)]
    ids = np.arange(1, n + 1, dtype=np.int32)
    chunks = {
        "id": ids,
        "file_id": ids,
        "chunk_type": np.array(["function"] * n, dtype=object),
        "symbol": np.array([f"f{i}" for i in ids], dtype=object),
        "code": np.array([f"def f{i}(): pass" for i in ids], dtype=object),
        "start_line": np.ones(n, dtype=np.int32),
        "end_line": np.ones(n, dtype=np.int32),
    }
    rows = np.empty(n, dtype=object)
    rows[:] = [None if v is None else np.array(v, dtype=np.float32) for v in vectors]
    write_index(db, files, chunks, [("openai", "tiny", ids, np.zeros((n, 4), dtype=np.float32))])
    con = duckdb.connect(str(db))
    try:  # vectors with NULL values cannot come through numpy: write them as SQL literals
        for chunk_id, vector in zip(ids, vectors, strict=True):
            literal = (
                "NULL" if vector is None else "[" + ", ".join("NULL" if x is None else str(x) for x in vector) + "]"
            )
            con.execute(f"UPDATE embeddings_4 SET embedding = {literal}::FLOAT[4] WHERE chunk_id = ?", [int(chunk_id)])
    finally:
        con.close()


def tiny_set(db: Path) -> database.EmbeddingSet:
    with database.connect(db.parent, db) as con:
        return database.layout(con, db).embedding_sets[0]


def test_extreme_magnitudes_score_as_in_duckdb(tmp_path):
    db = tmp_path / "chunks.db"
    tiny_index(db, [[1e30, 1e30, 0, 0], [1e-20, 1e-20, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], None, [-1, 0, 0, 0]])
    embedding_set = tiny_set(db)
    for query in ([1, 0, 0, 0], [0, 0, 0, 0], [0.3, -2, 5, 1]):
        for offset in range(7):
            compare(db, embedding_set, np.array([query], dtype=np.float32), Filters(), 3, offset)


def test_vector_with_null_values_fails_like_sql_unless_filtered_out(tmp_path):
    db = tmp_path / "chunks.db"
    tiny_index(db, [[1, 0, 0, 0], [1, None, 0, 0], [0, 1, 0, 0]], languages=["python", "go", "python"])
    embedding_set = tiny_set(db)
    query = np.array([[1, 0, 0, 0]], dtype=np.float32)
    with pytest.raises(IndexUnreadableError, match="NULL values"), database.connect(tmp_path, db) as con:
        database.semantic(con, embedding_set, query, Filters(), 3, 0)
    with pytest.raises(IndexUnreadableError, match="NULL values"):
        ranked_by_snapshot(db, embedding_set, query, Filters(), 3, 0)
    compare(db, embedding_set, query, Filters(languages=("python",)), 3, 0)


# -- A changed index, a writer, the policy, status --------------------------------------------------------------


def search_json(root: Path, base_url: str, **kwargs):
    """A search in ChunkHound's own order (the cache's promise is that order exactly)."""
    kwargs.setdefault("format", "json")
    kwargs.setdefault("mode", "semantic")
    answer = onetool_code.search(path=str(root), base_url=base_url, **kwargs)
    assert isinstance(answer, dict) and "results" in answer, answer
    return answer["results"]


def assert_same_results(cached: list[dict], sql: list[dict]) -> None:
    """Formatted results: identical but for the score's rounding of near-equal values."""
    assert [{k: v for k, v in r.items() if k != "score"} for r in cached] == [
        {k: v for k, v in r.items() if k != "score"} for r in sql
    ]
    assert all(abs(a["score"] - b["score"]) <= 0.0011 for a, b in zip(cached, sql, strict=True))


SAMPLE_QUERIES = ["retry with exponential backoff", "parse configuration file", "UserSession token"]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"limit": 3, "offset": 2, "chunk_type": "function|block"},
        {"include": "SRC|services", "exclude": "test", "language": "python|go"},
        {"language": "ts", "content": "never", "limit": 20},
    ],
    ids=str,
)
def test_library_answers_are_the_same_with_and_without_the_cache(sample_db, server, options):
    root = sample_db.parents[2]
    for query in SAMPLE_QUERIES:
        sql = search_json(root, server.base_url, query=query, cache=False, **options)
        cached = search_json(root, server.base_url, query=query, **options)
        assert_same_results(cached, sql)
    batch_options = {k: v for k, v in options.items() if k != "offset"}
    sql = onetool_code.search_batch(queries=SAMPLE_QUERIES, path=str(root), base_url=server.base_url, format="json", mode="semantic", cache=False, **batch_options)  # fmt: skip
    cached = onetool_code.search_batch(queries=SAMPLE_QUERIES, path=str(root), base_url=server.base_url, format="json", mode="semantic", **batch_options)  # fmt: skip
    assert_same_results(cached["results"], sql["results"])


def test_fixture_index_ranks_like_sql_at_every_offset(sample_db):
    embedding_set = tiny_set(sample_db)
    query = np.stack([vector_for(q) for q in [*SAMPLE_QUERIES, "LoanService"]])
    for offset in (0, 5, 40, 200):
        compare(sample_db, embedding_set, query, Filters(), 11, offset)


@pytest.mark.chunkhound
def test_chunkhounds_own_index_ranks_the_same_through_the_cache(server, tmp_path_factory):
    """The sample project indexed by the real ChunkHound 6.1.0 (its chunks, its HNSW index, duckdb 1.5's file)."""
    from tooling.chunkhound_env import ensure_chunkhound

    root = tmp_path_factory.mktemp("chunkhound-cache") / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    ensure_chunkhound().index(root, server.base_url)
    db = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    embedding_set = tiny_set(db)
    queries = np.stack([vector_for(q) for q in [*SAMPLE_QUERIES, "LoanService", "rate limiter token bucket"]])
    for filters in (
        Filters(),
        Filters(languages=("python", "go")),
        Filters(chunk_types=("function", "method")),
        Filters(include=("src",), exclude=("test",)),
    ):
        for offset in (0, 10):
            compare(db, embedding_set, queries, filters, 10, offset)


def replace_index(project: Path, dims: int = 1536) -> Path:
    """A new index built beside the old one and moved over it, as a re-index to a new file would."""
    fresh = project.parent / "fresh"
    shutil.copytree(project, fresh, ignore=shutil.ignore_patterns(".chunkhound"))
    (fresh / "src" / "bookshelf" / "retry.py").write_text("exponential backoff retry\n")
    new_db = index_sample(fresh, dims)
    old_db = project / ".chunkhound" / "db" / schema.DB_FILE_NAME
    new_db.replace(old_db)
    return old_db


@pytest.fixture
def project(sample_db, tmp_path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(sample_db.parents[2], root)
    return root


def test_a_snapshot_notices_an_index_replaced_under_it(project, server):
    query = "exponential backoff retry"
    before = search_json(project, server.base_url, query=query, limit=3)
    db = project / ".chunkhound" / "db" / schema.DB_FILE_NAME
    first = onetool_code.status(path=str(project), format="json")["snapshot"]
    replace_index(project)
    after = search_json(project, server.base_url, query=query, limit=3)
    assert after != before
    assert after[0]["file_path"] == "src/bookshelf/retry.py" and after[0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert_same_results(after, search_json(project, server.base_url, query=query, limit=3, cache=False))
    second = onetool_code.status(path=str(project), format="json")["snapshot"]
    assert second["current"] and second["folder"] != first["folder"]
    kept = json.loads((Path(second["folder"]) / "snapshot.json").read_text())["base"]
    assert not Path(first["folder"]).exists() or kept == Path(first["folder"]).name  # gone, or the new one's base
    assert db.exists()


WRITER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write, as ChunkHound opens it
vector = [float(x) for x in sys.argv[3].split(",")]
con.execute("UPDATE embeddings_1536 SET embedding = ?::FLOAT[1536] WHERE chunk_id = ?", [vector, int(sys.argv[2])])
con.close()
"""


def test_a_writer_opens_the_index_between_cached_searches(project, server):
    """No connection is held between searches: a ChunkHound-like writer gets in, and its change is seen."""
    query = "exponential backoff retry"
    db = project / ".chunkhound" / "db" / schema.DB_FILE_NAME
    first = search_json(project, server.base_url, query=query)
    target = 5  # a chunk far from the query; the writer gives it the query's own vector
    with database.connect(project, db) as con:
        path, start = con.execute(
            "SELECT f.path, c.start_line FROM chunks c JOIN files f ON c.file_id = f.id WHERE c.id = ?", [target]
        ).fetchone()
    assert all(r["file_path"] != path or not r["start_line"] <= start <= r["end_line"] for r in first[:1])
    vector = ",".join(repr(float(x)) for x in vector_for(query))
    done = subprocess.run([sys.executable, "-c", WRITER, str(db), str(target), vector], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    second = search_json(project, server.base_url, query=query)
    assert second != first
    assert second[0]["file_path"] == path and second[0]["start_line"] <= start <= second[0]["end_line"]
    assert second[0]["score"] == pytest.approx(1.0, abs=1e-3)
    assert_same_results(second, search_json(project, server.base_url, query=query, cache=False))


def test_wal_beside_the_index_changes_the_signature(tmp_path):
    db = tmp_path / "chunks.db"
    db.write_bytes(b"x" * 10)
    before = store.Signature.of(db)
    wal = tmp_path / "chunks.db.wal"
    wal.write_bytes(b"y")
    with_wal = store.Signature.of(db)
    wal.write_bytes(b"yy")
    assert len({before, with_wal, store.Signature.of(db)}) == 3


def test_cache_off_writes_no_snapshot(cold, sample_db, server, tmp_path, monkeypatch):
    monkeypatch.setenv(store.CACHE_ENV, str(tmp_path / "untouched"))
    root = sample_db.parents[2]
    for mode in ("semantic", "hybrid", "lexical", "regex"):
        query = "retry" if mode != "regex" else r"def \w+"
        assert onetool_code.search(
            query=query, path=str(root), base_url=server.base_url, mode=mode, cache=False
        ).startswith("Found ")
    assert "Snapshot: off" in onetool_code.status(path=str(root), cache=False)
    assert not (tmp_path / "untouched").exists()


def test_status_says_which_snapshot_answered_and_what_the_cache_holds(cold, sample_db, server):
    root = sample_db.parents[2]
    search_json(root, server.base_url, query="retry")
    text = onetool_code.status(path=str(root))
    line = next(line for line in text.splitlines() if line.startswith("Snapshot:"))
    assert line.startswith("Snapshot: of the index as it is, made ")
    data = onetool_code.status(path=str(root), format="json")["snapshot"]
    assert data["current"] and data["notice"] is None
    (store.cache_root() / "someone-else").mkdir(parents=True, exist_ok=True)  # not counted: not ours
    (store.cache_root() / "someone-else" / "big").write_bytes(b"x" * 100_000)
    data = onetool_code.status(path=str(root), format="json")["snapshot"]
    on_disk = sum(p.stat().st_size for p in Path(data["cache_dir"]).rglob("*") if p.is_file())
    assert data["cache_bytes"] == on_disk > 0
    assert Path(data["folder"]).parent == Path(data["cache_dir"])


# Another project's process publishing snapshots as fast as it can, through the one publisher every process uses:
# each folder written privately, renamed into place, the one before it renamed aside and removed. It prints how
# many it published.
PUBLISHER = """
import itertools, sys
from pathlib import Path
from onetool_code.index import store

stop = Path(sys.argv[1])
key = store.Key("snapshot", "/another/project/.chunkhound/db/chunks.db")


def write(into):
    for part in range(5):
        (into / f"part-{part}").mkdir()
        for i in range(4):
            (into / f"part-{part}" / f"{i}.npy").write_bytes(b"x" * 100)


for n in itertools.count():
    if stop.exists():
        break
    store.publish(store.folder(key, store.Signature(n, n, n, n, 0, None), 1), write)
    if n == 0:
        print("publishing", flush=True)
print(n)
"""


def test_status_beside_a_process_publishing_snapshots_never_fails(cold, sample_db, server, tmp_path):
    """Issue 32: status's walk of the cache directory stat'ed files another process's publish had just renamed
    or removed (``internal error (FileNotFoundError)``)."""
    root = sample_db.parents[2]
    search_json(root, server.base_url, query="retry")
    stop = tmp_path / "stop"
    publisher = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER, str(stop)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert publisher.stdout is not None and publisher.stdout.readline() == "publishing\n"
    answers = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            answers.append(onetool_code.status(path=str(root), format="json"))
    finally:
        stop.touch()
        out, _ = publisher.communicate(timeout=60)
    assert publisher.returncode == 0 and int(out) >= 20  # the walks raced that many publishes
    assert not [a for a in answers if "error" in a], next(a for a in answers if "error" in a)
    assert all(a["snapshot"]["cache_bytes"] > 0 for a in answers)
