"""``related``: code like a place, ranked by that chunk's stored vector, exactly as a semantic search with it."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest
from conftest import build_index, settled

import onetool_code
from onetool_code import index, request, schema, settings
from onetool_code.index import database
from onetool_code.search import related
from onetool_code.search.query_vectors import embedding_set

PLACE = {"file": "src/bookshelf/retry.py", "line": 40}


def chunk_at(db, file: str, line: int) -> tuple[int, np.ndarray, index.EmbeddingSet]:
    """The smallest chunk holding the line, and its vector as stored, read with ChunkHound's schema."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        chosen = index.layout(con, db).embedding_sets[0]
        (chunk_id, *_), *_ = con.execute(schema.CHUNKS_HOLDING_SQL, [file, line, line]).fetchall()
        (vector,) = con.execute(schema.vector_of_sql(chosen.dims), [chunk_id, chosen.provider, chosen.model]).fetchone()
        return chunk_id, np.asarray(vector, dtype=np.float32), chosen
    finally:
        con.close()


NO_FILTERS = schema.Filters()


def chunkhound_order(db, vector: np.ndarray, chosen: index.EmbeddingSet, filters=NO_FILTERS) -> list[int]:
    """ChunkHound's own semantic SQL with ``vector`` as the query: chunk ids, best first."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        (ranked,) = database.semantic(con, chosen, vector[np.newaxis], filters, 1000, 0)
        return [hit.chunk_id for hit in ranked]
    finally:
        con.close()


def related_ids(root, *, cache: bool, **options) -> list[int]:
    resolved = settings.resolve(path=str(root), cache=cache)
    req = request.parse(
        queries="like", batch=False, limit=options.pop("limit", 100), offset=options.pop("offset", 0),
        language=options.pop("language", None), chunk_type=None, include=options.pop("include", None),
        exclude=None, expand=None, mode="semantic", content=None, format=None, max_bytes=None,
    )  # fmt: skip
    return [hit.chunk_id for hit in related.run(resolved, req, **options).hits]


def holding(db, file: str, line: int) -> set[int]:
    """Every chunk of ``file`` whose lines hold ``line``: the place asked about, left out of its answer."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return set(database.chunks_holding(con, file, line))
    finally:
        con.close()


@pytest.mark.parametrize("cache", [True, False], ids=["snapshot", "index-file"])
@pytest.mark.parametrize(("path", "line"), [("src/bookshelf/retry.py", 40), ("services/catalog/store.go", 30)])
def test_the_order_is_a_semantic_search_with_the_chunks_own_vector(sample_index, cache, path, line):
    _, vector, chosen = chunk_at(sample_index.db, path, line)
    around = holding(sample_index.db, path, line)
    expected = [c for c in chunkhound_order(sample_index.db, vector, chosen) if c not in around]
    assert related_ids(sample_index.root, cache=cache, file=path, line=line) == expected[:100]


def test_filters_and_pages_are_those_of_search(sample_index):
    _, vector, chosen = chunk_at(sample_index.db, **PLACE)
    python = schema.Filters(languages=("python",), include=("src",))
    around = holding(sample_index.db, **PLACE)
    expected = [c for c in chunkhound_order(sample_index.db, vector, chosen, python) if c not in around]
    got = related_ids(sample_index.root, cache=True, language="python", include="src", limit=5, offset=5, **PLACE)
    assert got == expected[5:10]


def test_no_embeddings_request_is_made(sample_index, server):
    """With the embeddings server out of reach (a closed port), related still answers, and asks nothing of it."""
    before = len(server.requests)
    answer = onetool_code.related(**PLACE, path=str(sample_index.root), base_url="http://127.0.0.1:9/v1", limit=3)
    assert answer.startswith("Found ") and "for: like src/bookshelf/retry.py:40" in answer.splitlines()[0]
    assert "matches:" not in answer  # no words were asked for: no line is listed as matching them
    assert len(server.requests) == before


def test_the_answer_is_shaped_and_formatted_as_search(sample_index):
    root = str(sample_index.root)
    answer = onetool_code.related(**PLACE, path=root, limit=2, format="json", max_bytes=2000)
    assert set(answer) >= {"results", "count"} and answer["count"] <= 2
    assert len(json.dumps(answer, separators=(",", ":")).encode()) <= 2000
    assert all(r["file_path"] and r["start_line"] >= 1 for r in answer["results"])


def test_paths_are_read_as_answers_show_them(sample_index):
    root = sample_index.root
    given = [str(root / PLACE["file"]), "./" + PLACE["file"], PLACE["file"]]
    answers = {onetool_code.related(file=f, line=40, path=str(root), limit=3) for f in given}
    assert len(answers) == 1 and not next(iter(answers)).startswith("Error")


def test_clear_errors(sample_index, tmp_path):
    root = str(sample_index.root)
    assert onetool_code.related(file="nowhere.py", line=1, path=root) == (
        "Error: nowhere.py is not in the index: give a file as answers show it (relative to the project)"
    )
    assert onetool_code.related(file="src/bookshelf/retry.py", line=100_000, path=root) == (
        "Error: no indexed chunk of src/bookshelf/retry.py holds line 100000 (past its end, or between chunks)"
    )
    assert onetool_code.related(file="/etc/passwd", line=1, path=root) == (
        f"Error: file '/etc/passwd' is outside the project {root}"
    )
    assert onetool_code.related(file="src/bookshelf/retry.py", line=0, path=root) == (
        "Error: line must be a whole number from 1 to 10,000,000, got 0"
    )
    assert onetool_code.related(file=" ", line=3, path=root) == "Error: file must be non-empty text, got ' '"
    assert onetool_code.related(file="src/bookshelf/retry.py", line=40, path=root, model="other-model") == (
        "Error: The index holds no vectors for openai/other-model. It holds: openai/text-embedding-3-small, "
        "1536 dims (392 chunks). Search with that model (model=..., provider=..., base_url=... or the "
        "project's .chunkhound.json), or re-index with the configured one."
    )


@pytest.mark.parametrize("cache", [True, False], ids=["snapshot", "index-file"])
def test_an_index_without_vectors_says_so(project, tmp_path, cache):
    root = tmp_path / "words-only"
    root.mkdir()
    (root / "app.py").write_text("def load_config(path):\n    return open(path).read()\n")
    db = build_index(root, None, embeddings=False)
    digest = db.read_bytes()
    answer = onetool_code.related(file="app.py", line=1, path=str(root), cache=cache)
    assert answer.startswith("Error: The index ") and "holds no embeddings at all" in answer
    assert db.read_bytes() == digest


def test_the_index_file_is_not_changed(sample_index):
    digest = sample_index.digest()
    onetool_code.related(**PLACE, path=str(sample_index.root), cache=False)
    onetool_code.related(**PLACE, path=str(sample_index.root))
    assert sample_index.digest() == digest


def test_the_chosen_chunk_is_the_smallest_holding_the_line(sample_index):
    resolved = settings.resolve(path=str(sample_index.root))
    con = duckdb.connect(str(sample_index.db), read_only=True)
    try:
        ids = database.chunks_holding(con, PLACE["file"], PLACE["line"])
        spans = {
            cid: end - start
            for cid, start, end in con.execute(
                "SELECT id, start_line, end_line FROM chunks WHERE id IN (SELECT unnest(?::BIGINT[]))", [ids]
            ).fetchall()
        }
        chosen = embedding_set(index.layout(con, resolved.db_path), resolved)
    finally:
        con.close()
    assert len(ids) >= 2 and [spans[c] for c in ids] == sorted(spans.values())
    chunk_id, _, _ = chunk_at(sample_index.db, **PLACE)
    assert chunk_id == ids[0] and chosen.dims == 1536


def related_chunk_ids(root, line: int) -> set[int]:
    """Every chunk ``related`` lists for ``src/bookshelf/retry.py:line`` (all but the one it starts from)."""
    resolved = settings.resolve(path=str(root))
    req = request.parse(
        queries="like", batch=False, limit=100, offset=0, language=None, chunk_type=None, include=None,
        exclude=None, expand=None, mode="semantic", content=None, format=None, max_bytes=None,
    )  # fmt: skip
    return {hit.chunk_id for hit in related.run(resolved, req, "src/bookshelf/retry.py", line).hits}


@pytest.mark.parametrize("numbering", ["the file's own", "chunkhound's"])
def test_a_line_is_the_files_own_whichever_way_the_index_numbers_it(project, numbering):
    """``retry.py`` starts with three blank lines, which ChunkHound does not number (our indexer does): line 28,
    the last of ``backoff_delays``, is that function's chunk either way."""
    con = duckdb.connect(str(project.db))
    try:
        (chunk_id,) = con.execute("SELECT id FROM chunks WHERE symbol = 'backoff_delays'").fetchone()
        if numbering == "chunkhound's":
            con.execute(
                "UPDATE chunks SET start_line = start_line - 3, end_line = end_line - 3 WHERE file_id = "
                "(SELECT id FROM files WHERE path = 'src/bookshelf/retry.py')"
            )
    finally:
        con.close()
    settled(project.db)
    assert chunk_id not in related_chunk_ids(project.root, 28)  # it is where related starts
    assert chunk_id in related_chunk_ids(project.root, 33)  # from def retry, it is one of the others


@pytest.mark.parametrize(
    ("place", "around"),
    [
        ({"file": "src/bookshelf/retry.py", "line": 40}, "function retry"),
        ({"file": "src/bookshelf/auth.py", "line": 42}, "class UserSession"),
    ],
)
def test_no_chunk_that_holds_the_line_is_an_answer(sample_index, place, around):
    """The code around the place asked about (the function or class holding the line, as well as the smallest
    chunk there) is that place, not code like it: no result of the place's file spans the line."""
    con = duckdb.connect(str(sample_index.db), read_only=True)
    try:
        enclosing = con.execute(
            "SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE f.path = ? AND c.chunk_type || ' ' || "
            "c.symbol = ? AND c.start_line <= ? AND ? <= c.end_line",
            [place["file"], around, place["line"], place["line"]],
        ).fetchall()
    finally:
        con.close()
    assert len(holding(sample_index.db, **place)) >= 2 and len(enclosing) == 1  # more than the smallest holds it
    answer = onetool_code.related(**place, path=str(sample_index.root), limit=100, format="json", max_bytes=100_000)
    assert answer["count"] >= 10
    spanning = [
        r
        for r in answer["results"]
        if r["file_path"] == place["file"] and r["start_line"] <= place["line"] <= r["end_line"]
    ]
    assert not spanning, spanning
    assert enclosing[0][0] not in related_ids(sample_index.root, cache=True, limit=100, **place)
