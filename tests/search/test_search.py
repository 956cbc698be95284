"""The search engine end to end through the library: real index, real openai client, real test server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time

import conftest
import duckdb
import numpy as np
import pytest
import xxhash
from openai_server import vector_for

import onetool_code
from onetool_code import schema
from onetool_code.search import ranking

QUERY = "retry with exponential backoff"


def search(project, **kwargs):
    kwargs.setdefault("path", str(project.root))
    kwargs.setdefault("base_url", project.base_url)
    return onetool_code.search(**kwargs)


def ranked(project, query, **options):
    return conftest.ranked(project.root, project.base_url, query, **options)


def chunkhound_sql(db, query, limit=10, offset=0):
    """ChunkHound's own semantic query, verbatim from its source of truth (chunkhound-index.md)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            """SELECT c.id, c.symbol, c.code, c.chunk_type, c.start_line, c.end_line, f.path, f.language,
                   array_cosine_similarity(e.embedding, ?::FLOAT[1536]) AS similarity
            FROM embeddings_1536 e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id
            WHERE e.provider = ? AND e.model = ?
            ORDER BY similarity DESC LIMIT ? OFFSET ?""",
            [vector_for(query).tolist(), "openai", "text-embedding-3-small", limit, offset],
        ).fetchall()
    finally:
        con.close()
    return [(r[6], r[4], r[5], r[8]) for r in rows]


@pytest.mark.parametrize("query", [QUERY, "parse configuration file", "UserSession", "rate limiter", "LoanService"])
def test_semantic_ranking_is_chunkhounds(sample_index, query):
    ours = [(h.file_path, h.start_line, h.end_line, h.score) for h in ranked(sample_index, query).hits]
    theirs = chunkhound_sql(sample_index.db, query)
    assert [o[:3] for o in ours] == [t[:3] for t in theirs] or _only_ties_differ(ours, theirs)
    assert np.allclose([o[3] for o in ours], [t[3] for t in theirs], atol=1e-6)


def _only_ties_differ(ours, theirs):
    """ChunkHound leaves ties unordered; ours breaks them by path then line: same multiset per score."""
    group = lambda rows: sorted((round(r[3], 6), r[:3]) for r in rows)  # noqa: E731
    return group(ours) == group(theirs)


def test_search_answers_with_locations_and_leaves_the_index_untouched(sample_index, server):
    before = sample_index.digest()
    requests_before = len(server.embedding_requests())
    answer = search(sample_index, query=QUERY)
    assert answer.startswith("Found ") and f"for: {QUERY}" in answer.splitlines()[0]
    assert "\nsrc/bookshelf/retry.py" in answer
    assert len(server.embedding_requests()) == requests_before + 1
    assert sample_index.digest() == before


def test_batch_embeds_all_queries_in_one_request(sample_index, server):
    before = len(server.embedding_requests())
    answer = onetool_code.search_batch(
        queries="rate limiter|cache eviction|parse configuration file", path=str(sample_index.root),
        base_url=sample_index.base_url, format="json",
    )  # fmt: skip
    requests = server.embedding_requests()[before:]
    assert len(requests) == 1
    assert requests[0].body["input"] == ["rate limiter", "cache eviction", "parse configuration file"]
    assert 0 < answer["count"] <= 10
    found_by = {q for item in answer["results"] for q in item["queries"]}
    assert found_by == {1, 2, 3}


def test_batch_total_cap_and_dedupe(sample_index):
    answer = onetool_code.search_batch(
        queries=["retry backoff", "retry with exponential backoff"], path=str(sample_index.root),
        base_url=sample_index.base_url, limit=4, format="json", content="never",
    )  # fmt: skip
    locations = [(a["file_path"], a["start_line"], a["end_line"]) for a in answer["results"]]
    assert len(locations) == len(set(locations)) <= 4
    assert any(a["queries"] == [1, 2] for a in answer["results"])


def test_offset_pages_do_not_overlap(sample_index):
    first = ranked(sample_index, QUERY, limit=5)
    second = ranked(sample_index, QUERY, limit=5, offset=5)
    assert first.next_offset == 5
    assert {h.key for h in first.hits}.isdisjoint({h.key for h in second.hits})
    both = ranked(sample_index, QUERY, limit=10).hits
    assert [h.key for h in both] == [h.key for h in first.hits + second.hits]


def text_locations(answer: str) -> list[tuple[str, int, int]]:
    """(path, start, end) of each result of a text answer: ``N. path:a-b ...``, or ``N. :a-b ...`` under a
    path line of its own when one file has several results (a one-line range is one number)."""
    found, path = [], None
    for line in answer.splitlines():
        result = re.match(r"^\d+\. (\S*):(\d+)(?:-(\d+))?", line)
        if result:
            where = result[1] or path
            found.append((where, int(result[2]), int(result[3] or result[2])))
        elif re.fullmatch(r"[^\s`]\S*", line) and not line.startswith(("Found", "Note:", "More", "Left")):
            path = line
    return found


@pytest.mark.parametrize("fmt", ["compact", "json", "text"])
def test_following_next_offset_never_skips_a_hit_the_budget_left_out(sample_index, fmt):
    query, depth = "config file path", 30
    everything = ranked(sample_index, query, mode="lexical", limit=depth).hits
    shown, offset, pages = [], 0, 0
    while offset is not None and offset < depth:
        answer = search(sample_index, query=query, mode="lexical", format=fmt, limit=10, max_bytes=650, offset=offset)
        if fmt == "text":
            shown += text_locations(answer)
            found = re.search(r"^More results: offset=(\d+)$", answer, re.M)
            following = int(found[1]) if found else None
        else:
            answer = conftest.read_compact(answer) if fmt == "compact" else answer
            results = answer.get("results", [])
            rows = conftest.compact_rows(answer) if fmt == "compact" else []
            shown += (
                [(where, start, end) for where, start, end, _ in rows]
                if fmt == "compact"
                else [(r["file_path"], r["start_line"], r["end_line"]) for r in results]
            )
            following = answer.get("next_offset")
            assert answer["count"] == len(rows if fmt == "compact" else results)
        assert following is None or following > offset  # every page moves on
        offset, pages = following, pages + 1
    assert pages > 3  # the budget really cut pages short
    missing = [
        h.key for h in everything[: offset or depth]
        if not any(path == h.file_path and start <= h.end_line and h.start_line <= end for path, start, end in shown)
    ]  # fmt: skip
    assert not missing


def test_limit_one_means_one(sample_index):
    assert len(ranked(sample_index, QUERY, limit=1).hits) == 1


def test_language_filter_with_aliases(sample_index):
    hits = ranked(sample_index, QUERY, language="golang|RS").hits
    assert hits and {h.language for h in hits} <= {"go", "rust"}


def test_language_absent_from_index_is_explained(sample_index):
    answer = search(sample_index, query=QUERY, language="kotlin")
    assert answer.startswith("Error: no files in language kotlin in this index; it holds: python (")


def test_chunk_type_filter(sample_index):
    hits = ranked(sample_index, QUERY, chunk_type="function|method").hits
    assert hits and {h.chunk_type for h in hits} <= {"function", "method"}


def test_include_and_exclude_are_case_insensitive_substrings(sample_index):
    hits = ranked(sample_index, "search books by title", exclude="TEST|Mock").hits
    assert hits and not any("test" in h.file_path.lower() or "mock" in h.file_path.lower() for h in hits)
    hits = ranked(sample_index, "search books by title", include="SERVICES/|indexer/").hits
    assert hits and all(h.file_path.startswith(("services/", "indexer/")) for h in hits)


@pytest.mark.parametrize("pattern", ["%", "%_%", "'", '"', "\\", "%' OR 1=1 --"])
def test_sql_wildcards_and_quotes_in_path_patterns_are_literal(sample_index, pattern):
    before = sample_index.digest()
    assert ranked(sample_index, QUERY, include=pattern).hits == []
    assert len(ranked(sample_index, QUERY, exclude=pattern).hits) == 10
    assert sample_index.digest() == before


def test_lexical_mode_needs_no_key_and_no_server(sample_index, server):
    before = len(server.requests)
    answer = onetool_code.search(query="load_config", path=str(sample_index.root), mode="lexical", format="json")
    answer = answer["results"]
    assert answer and answer[0]["file_path"] == "src/bookshelf/config.py"
    assert "load_config" in answer[0]["definitions"] or "load_config" in answer[0]["name"]
    assert len(server.requests) == before


def test_lexical_query_without_words(sample_index):
    answer = onetool_code.search(query="a + b", path=str(sample_index.root), mode="lexical")
    assert answer.startswith("Error: query 'a + b' has no word of two or more")


def test_no_results_is_not_an_error(sample_index):
    answer = onetool_code.search(query="zzqxv", path=str(sample_index.root), mode="lexical")
    assert answer == "No results found for: zzqxv"


def test_missing_key_message(sample_index):
    answer = onetool_code.search(query=QUERY, path=str(sample_index.root), mode="semantic")
    assert answer.startswith(
        "Error: OPENAI_API_KEY not configured in secrets.yaml (required for code search embeddings)."
    )
    assert 'mode="lexical"' in answer


def test_hybrid_without_a_key_answers_by_words_and_says_why(sample_index, server):
    before = len(server.requests)
    answer = onetool_code.search(query="load the config", path=str(sample_index.root), limit=2)
    assert answer.splitlines()[:2] == [
        "Found 2 results for: load the config",
        "Note: answered by words only (lexical): no API key for the embeddings (OPENAI_API_KEY)",
    ]
    assert answer.splitlines()[2].startswith("1. src/bookshelf/config.py:136-141 function load_config (")
    assert len(server.requests) == before


def test_a_name_the_words_find_is_answered_without_the_embeddings_api(sample_index, server):
    """No key needed, no notice, no request: the vectors of a name would not be fused (``ranking.names_only``).
    A name the words cannot find is still looked for by meaning, unless the words found another of its batch."""
    before = len(server.requests)
    answer = onetool_code.search(query="load_config", path=str(sample_index.root), limit=2)  # no key
    assert answer.splitlines()[0] == "Found 2 results for: load_config"
    first = re.fullmatch(
        r"1\. src/bookshelf/config\.py:136-141 function load_config \((\d+\.\d\d)\)", answer.splitlines()[1]
    )
    assert first and float(first.group(1)) >= ranking.NAMED  # first, and named
    # A name in its class is a name too, as its parts say (not the sentence "router dispatch").
    qualified = onetool_code.search(query="Router.dispatch", path=str(sample_index.root), format="json", limit=2)
    best = qualified["results"][0]
    assert (best["file_path"], best["name"]) == ("src/bookshelf/api.py", "dispatch") and "notice" not in qualified
    for names in ("load_config|SessionStore", "load_config|qxzv_unwritten"):  # the second: found for one of two
        batch = onetool_code.search_batch(queries=names, path=str(sample_index.root), format="json")
        assert batch["count"] and "notice" not in batch
    assert len(server.requests) == before
    unknown = search(sample_index, query="qxzv_unwritten", format="json")
    (request,) = server.requests[before:]
    assert request.body["input"] == ["qxzv_unwritten"] and unknown["results"] and "notice" not in unknown


def test_json_errors_are_objects(sample_index):
    assert onetool_code.search(query="", path=str(sample_index.root), format="json") == {
        "error": 'query is empty: say what code you are looking for, e.g. query="parse config file"'
    }


def test_unknown_and_missing_arguments_are_errors_not_exceptions(sample_index):
    assert onetool_code.search(qurey="x").startswith("Error: unknown argument qurey; valid: query, path")
    assert onetool_code.search_batch().startswith("Error: missing required argument queries")
    assert onetool_code.search("retry") == 'Error: search() takes keyword arguments only, e.g. search(query="...")'


# --- the index: missing, foreign, broken, locked -------------------------------------------------------


def test_not_indexed(tmp_path):
    answer = onetool_code.search(query=QUERY, path=str(tmp_path))
    assert answer == (
        f"Error: Project not indexed. Run: chunkhound index {tmp_path.resolve()} (expected database at: "
        f"{tmp_path.resolve()}/.chunkhound/db/chunks.db; or build a compatible index with: python -m onetool_code "
        f"index {tmp_path.resolve()}, or without an embeddings key, enough for words: python -m onetool_code index "
        f"{tmp_path.resolve()} --no-embeddings)"
    )
    assert onetool_code.status(path=str(tmp_path)).startswith("Error: Project not indexed.")


def test_db_pointing_at_a_text_file(tmp_path):
    (tmp_path / "notes.db").write_text("hello, not a database\n" * 100)
    before = (tmp_path / "notes.db").read_bytes()
    answer = onetool_code.search(query=QUERY, path=str(tmp_path), db="notes.db", mode="lexical")
    assert answer.startswith(f"Error: {tmp_path.resolve()}/notes.db is not a readable DuckDB index file")
    assert (tmp_path / "notes.db").read_bytes() == before


def test_db_pointing_at_a_directory_uses_its_chunks_db(sample_index, tmp_path):
    assert onetool_code.search(
        query=QUERY, path=str(tmp_path), db=str(sample_index.db.parent), mode="lexical"
    ).startswith("Found")
    (tmp_path / "dir.db").mkdir()
    answer = onetool_code.search(query=QUERY, path=str(tmp_path), db="dir.db", mode="lexical")
    assert answer.startswith(f"Error: {tmp_path.resolve()}/dir.db is a directory, not an index file")


def test_db_missing_path(tmp_path):
    answer = onetool_code.search(query=QUERY, path=str(tmp_path), db="nowhere/x.db", mode="lexical")
    named = tmp_path.resolve() / "nowhere/x.db"
    assert answer == (
        f"Error: No index at {named}, the index file named by db (or tools.code.db, the project's .chunkhound.json, "
        f"CHUNKHOUND_DATABASE__PATH): check that path, or write the index there with chunkhound index "
        f"{tmp_path.resolve()} --db {named}"
    )


def test_truncated_index(project):
    data = project.db.read_bytes()
    project.db.write_bytes(data[: len(data) // 3])
    answer = search(project, query=QUERY, mode="lexical")
    assert answer.startswith("Error: ") and str(project.db) in answer and "Traceback" not in answer


def test_foreign_duckdb_without_chunkhound_tables(tmp_path):
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE things (id INTEGER)")
    con.close()
    answer = onetool_code.search(query=QUERY, path=str(tmp_path), db="other.duckdb", mode="lexical")
    assert answer == f"Error: {db.resolve()} is not a ChunkHound index: it has no 'files' table."


def test_missing_column_is_named(tmp_path):
    db = tmp_path / "odd.db"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE files (id INTEGER, path TEXT, language TEXT)")
    con.execute(
        "CREATE TABLE chunks (id INTEGER, file_id INTEGER, chunk_type TEXT, symbol TEXT, start_line INTEGER, end_line INTEGER)"
    )
    con.close()
    assert onetool_code.search(query=QUERY, path=str(tmp_path), db="odd.db", mode="lexical") == (
        f"Error: {db.resolve()} is not a ChunkHound index: table 'chunks' lacks column(s) code."
    )


def make_index(db, dims, provider, model, texts):
    """A tiny index with ChunkHound's DDL and vectors of one provider/model."""
    db.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(db))
    for statement in (*schema.SCHEMA_DDL, *schema.embedding_ddl(dims)):
        con.execute(statement)
    con.execute("INSERT INTO files (path, name, extension, language) VALUES ('a.py', 'a.py', 'py', 'python')")
    for i, text in enumerate(texts, start=1):
        con.execute(
            "INSERT INTO chunks (file_id, chunk_type, symbol, code, start_line, end_line, language) "
            "VALUES (1, 'function', ?, ?, ?, ?, 'python')",
            [f"f{i}", text, i * 10, i * 10 + 2],
        )
        con.execute(
            f"INSERT INTO {schema.embedding_table(dims)} (chunk_id, provider, model, embedding) VALUES (?, ?, ?, ?)",
            [i, provider, model, vector_for(text, dims).tolist()],
        )
    con.close()


def test_index_with_only_other_model_vectors_lists_them(tmp_path, server):
    db = tmp_path / ".chunkhound" / "db" / "chunks.db"
    make_index(db, 3072, "openai", "text-embedding-3-large", ["def a(): pass", "def b(): pass"])
    before = db.read_bytes()
    answer = onetool_code.search(
        query=QUERY, path=str(tmp_path), base_url=server.base_url, model="text-embedding-3-small", mode="semantic"
    )
    assert answer == (
        "Error: The index holds no vectors for openai/text-embedding-3-small. It holds: "
        "openai/text-embedding-3-large, 3072 dims (2 chunks). Search with that model (model=..., provider=..., "
        "base_url=... or the project's .chunkhound.json), or re-index with the configured one."
    )
    for named in ("text-embedding-3-large", None):  # named, or the index's only vector set (ChunkHound's rule)
        found = onetool_code.search(
            query="def a", path=str(tmp_path), base_url=server.base_url, model=named, format="json"
        )
        assert found["results"][0]["name"] == "f1"
        assert server.embedding_requests()[-1].body["model"] == "text-embedding-3-large"
    assert db.read_bytes() == before


def test_model_from_chunkhound_json_is_used(tmp_path, server):
    make_index(tmp_path / ".chunkhound" / "db" / "chunks.db", 3072, "openai", "text-embedding-3-large", ["x = 1"])
    (tmp_path / ".chunkhound.json").write_text(
        json.dumps({"embedding": {"model": "text-embedding-3-large", "base_url": server.base_url}})
    )
    answer = onetool_code.search(query="x", path=str(tmp_path), format="json")
    assert answer["results"][0]["file_path"] == "a.py"
    assert server.embedding_requests()[-1].body["model"] == "text-embedding-3-large"


def test_index_without_embeddings(tmp_path):
    db = tmp_path / ".chunkhound" / "db" / "chunks.db"
    make_index(db, 1536, "openai", "text-embedding-3-small", [])
    answer = onetool_code.search(query=QUERY, path=str(tmp_path), base_url="http://127.0.0.1:9/v1", mode="semantic")
    assert answer.startswith(f"Error: The index {db} holds no embeddings at all")


def test_an_index_without_vectors_still_answers_a_default_search(sample_index, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(sample_index.root, root, ignore=shutil.ignore_patterns(".chunkhound"))
    conftest.build_index(root, None, embeddings=False)
    answer = onetool_code.search(query="load config", path=str(root), limit=1, content="never")
    assert answer.splitlines()[:2] == [
        "Found 1 result for: load config",
        "Note: answered by words only (lexical): the index holds no vectors for openai/text-embedding-3-small",
    ]
    assert answer.splitlines()[2].startswith("1. src/bookshelf/config.py:136-141 function load_config (")


def _hold_write_lock(db):
    """A separate process holding the index read-write, as ChunkHound's indexer or MCP server does."""
    code = "import duckdb, sys, time; con = duckdb.connect(sys.argv[1]); print('ready', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "ready"
    return holder


def test_with_snapshots_off_a_locked_index_gives_a_clear_error_at_once(project):
    """Snapshots off, every call opens the index itself, as ChunkHound's own tools do (with snapshots on, a
    private copy answers: test_snapshot)."""
    holder = _hold_write_lock(project.db)
    try:
        started = time.perf_counter()
        answer = search(project, query=QUERY, cache=False)
        elapsed = time.perf_counter() - started
        status = onetool_code.status(path=str(project.root), cache=False)
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert answer.startswith("Error: the index is in use by ChunkHound (python")
    assert f"PID {holder.pid})" in answer and "--read-only" in answer
    assert elapsed < 2.0
    assert "In use: yes, the index is in use by ChunkHound" in status


def test_connection_is_closed_after_every_call(project):
    """A writer can open the index right after each kind of call: we keep no connection."""
    search(project, query=QUERY)
    onetool_code.search_batch(queries="a b|c d", path=str(project.root), base_url=project.base_url)
    onetool_code.status(path=str(project.root))
    search(project, query="oops", limit=0)
    writer = subprocess.run(
        [sys.executable, "-c", "import duckdb, sys; duckdb.connect(sys.argv[1]).close(); print('ok')", str(project.db)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert writer.stdout.strip() == "ok", writer.stderr


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ({"query": ""}, "Error: query is empty"), ({"query": "x" * 2001}, "Error: query is 2,001 characters long"),
        ({"limit": 0}, "Error: limit must be"), ({"limit": 101}, "Error: limit must be"),
        ({"limit": "ten"}, "Error: limit must be"), ({"chunk_type": "widget"}, "Error: unknown chunk_type 'widget'"),
        ({"language": "klingon"}, "Error: unknown language 'klingon'"), ({"db": "missing.db"}, "Error: No index at"),
        ({"exclude": "%_'\""}, "Found "),  # quotes and LIKE wildcards are plain characters of a path
    ],
)  # fmt: skip
def test_bad_input_never_changes_the_index(sample_index, bad, says):
    before = sample_index.digest()
    answer = search(sample_index, **{"query": QUERY, **bad})
    assert answer.startswith(says), answer
    assert sample_index.digest() == before


def test_a_project_path_with_quotes_and_spaces(sample_index, tmp_path):
    """Quotes, spaces and SQL in the project path are just characters of a path."""
    root = tmp_path / 'it\'s a "project"; DROP TABLE files'
    shutil.copytree(sample_index.root, root)
    answer = onetool_code.search(query="load_config", path=str(root), mode="lexical", limit=1)
    assert answer.startswith("Found 1 result for: load_config")
    assert onetool_code.status(path=str(root)).startswith(f"Project: {root}")


@pytest.mark.internal_error_expected
def test_a_bug_in_our_sql_is_an_internal_error_not_a_damaged_index(sample_index, monkeypatch, spans):
    """Binder, parser and catalog errors come from our own SQL: they must not read as the user's broken file."""
    monkeypatch.setattr(schema, "CHUNK_ROWS_WINDOW_SQL", "SELECT no_such_column FROM chunks")
    answer = search(sample_index, query=QUERY, mode="regex")
    assert answer.startswith("Error: internal error (BinderException): ")
    assert "Cannot read the index" not in answer and "not a readable" not in answer
    assert '"traceback"' in spans[-1].getMessage()


@pytest.mark.parametrize("mode", ["semantic", "lexical"])
def test_hits_carry_their_files_row_as_indexed(sample_index, mode):
    """What shaping compares with the file on disk: the row's size, mtime and xxh3-64 hash of the indexed bytes."""
    hits = ranked(sample_index, QUERY, mode=mode).hits
    assert hits
    for hit in hits:
        path = sample_index.root / hit.file_path
        data = path.read_bytes()
        assert (hit.file.size, hit.file.content_hash) == (len(data), xxhash.xxh3_64_hexdigest(data))
        assert abs(hit.file.mtime - path.stat().st_mtime) <= 0.01


def test_an_index_whose_files_rows_lack_size_and_hash_still_answers(tmp_path):
    """Indexes written before ChunkHound stored ``content_hash`` (and hand-made ones) have fewer columns."""
    db = tmp_path / "old.db"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE files (id INTEGER, path TEXT, language TEXT)")
    con.execute(
        "CREATE TABLE chunks (id INTEGER, file_id INTEGER, chunk_type TEXT, symbol TEXT, code TEXT, "
        "start_line INTEGER, end_line INTEGER)"
    )
    con.execute("INSERT INTO files VALUES (1, 'a.py', 'python')")
    con.execute("INSERT INTO chunks VALUES (1, 1, 'function', 'retry', 'def retry():\n    pass', 3, 4)")
    con.close()
    (tmp_path / "a.py").write_text("import os\n\ndef retry():\n    pass\n")
    (item,) = onetool_code.search(query="retry", path=str(tmp_path), db="old.db", mode="lexical", format="json")[
        "results"
    ]
    assert (item["start_line"], item["end_line"], item["name"], item.get("note")) == (3, 4, "retry", None)
    (tmp_path / "a.py").write_text("import os\nimport sys\n\ndef retry():\n    pass\n")
    (item,) = onetool_code.search(query="retry", path=str(tmp_path), db="old.db", mode="lexical", format="json")[
        "results"
    ]
    assert (item["start_line"], item["note"]) == (4, "moved since indexing (indexed at 3-4)")


def _compact_places(results: list) -> list[tuple[str, float | None]]:
    """Each compact row as ``(file:start-end, score)``: a file's path, then its rows."""
    placed, file = [], ""
    for item in results:
        if isinstance(item, str):
            file = item
            continue
        lines = [n for n in item if isinstance(n, int)]
        what_at = len(lines)
        placed.append((f"{file}:{'-'.join(map(str, lines))}", item[what_at + 1]))
    return placed


@pytest.mark.parametrize("cache", [True, False], ids=["snapshot", "index-file"])
def test_a_stored_vector_of_nan_is_never_a_nan_score_nor_a_meaning(project, cache):
    """A broken model's NaN vector written into the index (ChunkHound checks none; written here with DuckDB, as
    its indexer would store it): ``semantic`` keeps ChunkHound's order, which ranks it first, and says why it
    has no score; hybrid's meaning list leaves it out (it ranked 7th for a query none of its words match);
    ``related`` from it is refused, since its vector would tie every chunk."""
    with duckdb.connect(str(project.db)) as con:
        (chunk_id,) = con.execute(
            "SELECT c.id FROM chunks c JOIN files f ON c.file_id = f.id "
            "WHERE f.path = 'services/catalog/retry.go' AND c.start_line = 1"
        ).fetchone()
        con.execute(
            "UPDATE embeddings_1536 SET embedding = list_transform(embedding, lambda x: 'nan'::FLOAT) "
            "WHERE chunk_id = ?",
            [chunk_id],
        )
    conftest.settled(project.db)
    query, nan_chunk = "search the catalogue", "services/catalog/retry.go:1-8"
    semantic = conftest.read_compact(
        search(project, query=query, mode="semantic", limit=3, format="compact", cache=cache)
    )
    assert semantic["notice"] == (
        "1 result has no score: its vector in the index is zeros or NaN, which ChunkHound ranks first (re-index "
        "with a working embeddings model)"
    )
    placed = _compact_places(semantic["results"])
    assert placed[0] == (nan_chunk, None)
    assert all(isinstance(score, float) for _, score in placed[1:])
    text = search(project, query=query, mode="semantic", limit=3, cache=cache)
    assert f"1. {nan_chunk} import (no score)" in text.splitlines() and "nan)" not in text
    hybrid = conftest.read_compact(search(project, query=query, limit=10, format="compact", cache=cache))
    assert "notice" not in hybrid and nan_chunk not in [place for place, _ in _compact_places(hybrid["results"])]
    assert onetool_code.related(file="services/catalog/retry.go", line=3, path=str(project.root), cache=cache) == (
        "Error: the chunk at services/catalog/retry.go:3 has no usable vector of openai/text-embedding-3-small in "
        "the index (indexed without embeddings, or by a broken model): related needs one; search by words instead: "
        'search(query="...", mode="lexical")'
    )
    like = onetool_code.related(file="src/bookshelf/config.py", line=5, path=str(project.root), format="json")
    assert like["notice"].startswith("1 result has no score") and like["results"][0]["score"] is None
    assert json.loads(json.dumps(like, allow_nan=False))["results"][1]["score"] > 0
