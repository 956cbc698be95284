"""Index builds end to end: real files, real DuckDB, the real local embeddings server; failures made for real."""

from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest
import xxhash
from openai_server import serve, vector_for

import onetool_code
from onetool_code import schema, settings
from onetool_code.errors import BadInputError, EmbeddingError, IndexLockedError, IndexUnreadableError, OneToolCodeError
from onetool_code.indexer import IndexSummary, build_index

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "fixtures" / "project"
MODEL = "text-embedding-3-small"

APP = '''"""The app."""
import os


def load_config(path):
    """Read the configuration file."""
    with open(path) as handle:
        return handle.read()


class Cache:
    def get(self, key):
        return key
'''
UTIL = """export function slugify(text: string): string {
  return text.toLowerCase().replace(/\\s+/g, "-");
}
"""
README = "# Demo\n\nA demo project for the indexer.\n\n## Usage\n\nRun it.\n"


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP)
    (root / "web").mkdir()
    (root / "web" / "util.ts").write_text(UTIL)
    (root / "README.md").write_text(README)
    return root


def configure(root: Path, base_url: str | None, **kwargs: str) -> settings.Settings:
    return settings.resolve(path=str(root), base_url=base_url, **kwargs)


def rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def chunk_ids(db: Path) -> dict[tuple[str, str, int], int]:
    """(path, symbol, start_line) -> chunk id."""
    found = rows(db, "SELECT f.path, c.symbol, c.start_line, c.id FROM chunks c JOIN files f ON f.id = c.file_id")
    return {(p, s, line): i for p, s, line, i in found}


def digest(paths: list[Path]) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in paths if p.exists()}


def texts_sent(server, since: int) -> list[str]:
    return [t for r in server.embedding_requests()[since:] for t in r.body["input"]]


@pytest.fixture
def demo(tmp_path) -> Path:
    return make_project(tmp_path / "demo")


# -- the index as ChunkHound lays it out ---------------------------------------------------------------------


def test_build_writes_chunkhounds_layout(demo, server):
    config = configure(demo, server.base_url)
    summary = build_index(config, progress=False)
    db = demo / ".chunkhound" / "db" / "chunks.db"
    assert summary.db_path == db == config.db_path
    assert (db.parent / "chunks.db.root.json").read_text() == json.dumps({"version": 1, "indexed_root_path": str(demo)})
    assert (db.parent / "chunks.db.embedding.json").read_text() == (
        '{"version": 1, "provider": "openai", "model": "text-embedding-3-small", "dims": 1536}\n'
    )
    assert sorted(p.name for p in db.parent.iterdir()) == [
        "chunks.db",
        "chunks.db.embedding.json",
        "chunks.db.root.json",
    ]
    # Storage version 64, as ChunkHound's own files, so its duckdb 1.5 can open ours.
    assert db.read_bytes()[8:12] == b"DUCK" and struct.unpack("<Q", db.read_bytes()[12:20])[0] == 64
    assert sorted(r[0] for r in rows(db, "SELECT table_name FROM duckdb_tables()")) == [
        "chunks", "embeddings_1536", "files", "schema_version",
    ]  # fmt: skip
    assert sorted(r[0] for r in rows(db, "SELECT index_name FROM duckdb_indexes()")) == [
        "idx_1536_chunk_provider_model_unique", "idx_1536_provider_model", "idx_chunks_file_id", "idx_chunks_symbol",
        "idx_chunks_type", "idx_embeddings_1536_chunk_id", "idx_files_language", "idx_files_path",
    ]  # fmt: skip
    assert rows(db, "SELECT version, description FROM schema_version") == [(1, "Initial schema")]
    files = rows(db, "SELECT path, name, extension, size, content_hash, language, skip_reason FROM files ORDER BY id")
    assert files == [
        (rel, rel.rsplit("/", 1)[-1], rel.rsplit(".", 1)[-1], (demo / rel).stat().st_size,
         xxhash.xxh3_64_hexdigest((demo / rel).read_bytes()), language, None)
        for rel, language in (("README.md", "markdown"), ("src/app.py", "python"), ("web/util.ts", "typescript"))
    ]  # fmt: skip
    mtimes = rows(db, "SELECT path, epoch(modified_time::TIMESTAMPTZ) FROM files")
    assert all(abs(m - (demo / p).stat().st_mtime) < 1e-5 for p, m in mtimes)
    chunks = rows(db, "SELECT f.path, c.chunk_type, c.symbol, c.start_line, c.end_line, c.language, c.metadata "
                      "FROM chunks c JOIN files f ON f.id = c.file_id ORDER BY f.path, c.start_line")  # fmt: skip
    assert chunks == [
        ("README.md", "header_1", "Demo", 1, 3, "markdown", None),
        ("README.md", "header_2", "Usage", 5, 7, "markdown", None),
        ("src/app.py", "comment", "module_docstring_line_1", 1, 1, "python", None),
        ("src/app.py", "import", "import_os", 2, 2, "python", None),
        ("src/app.py", "function", "load_config", 5, 8, "python", None),
        ("src/app.py", "class", "Cache", 11, 13, "python", None),
        ("src/app.py", "function", "get", 12, 13, "python", None),
        ("web/util.ts", "function", "slugify", 1, 3, "typescript", None),
    ]
    # Every chunk has its vector, made by the configured model from exactly the chunk's code.
    vectors = rows(db, "SELECT c.code, e.provider, e.model, e.dims, e.embedding FROM embeddings_1536 e "
                       "JOIN chunks c ON c.id = e.chunk_id")  # fmt: skip
    assert len(vectors) == len(chunks) == summary.embeddings_written == summary.chunks_total == summary.chunks_written
    for code, provider, model, dims, vector in vectors:
        assert (provider, model, dims) == ("openai", MODEL, 1536)
        np.testing.assert_array_equal(np.asarray(vector, dtype=np.float32), vector_for(code))
    assert (summary.files_seen, summary.files_indexed, summary.files_unchanged, summary.files_removed) == (3, 3, 0, 0)
    assert (summary.dims, summary.provider, summary.model, summary.hnsw) == (1536, "openai", MODEL, False)


def test_summary_describes_the_build_in_one_line(demo, server):
    summary = build_index(configure(demo, server.base_url), progress=False)
    text = summary.describe()
    assert "\n" not in text
    assert text.startswith(f"Indexed 3 files into {demo}/.chunkhound/db/chunks.db (3 new or changed, 0 unchanged,")
    assert "8 chunks written, 8 in the index; 8 embeddings written (openai/text-embedding-3-small, 1536 dims" in text
    assert isinstance(summary, IndexSummary)


def test_our_index_is_searchable_by_our_reader(demo, server):
    build_index(configure(demo, server.base_url), progress=False)
    found = onetool_code.search(query="read the configuration file", path=str(demo), base_url=server.base_url)
    assert "src/app.py" in found and "load_config" in found
    lexical = onetool_code.search(query="slugify", path=str(demo), mode="lexical")
    assert "web/util.ts" in lexical


# -- incremental builds --------------------------------------------------------------------------------------


def test_rerun_on_an_unchanged_project_changes_nothing(demo, server):
    config = configure(demo, server.base_url)
    build_index(config, progress=False)
    db = config.db_path
    files = [db, db.with_name("chunks.db.root.json"), db.with_name("chunks.db.embedding.json")]
    before, stamps, requests = digest(files), [p.stat().st_mtime_ns for p in files], len(server.embedding_requests())
    summary = build_index(config, progress=False)
    assert digest(files) == before
    assert [p.stat().st_mtime_ns for p in files] == stamps
    assert len(server.embedding_requests()) == requests
    assert not db.with_name("chunks.db.wal").exists()
    assert (summary.files_indexed, summary.files_unchanged, summary.chunks_written, summary.embeddings_written) == (
        0, 3, 0, 0,
    )  # fmt: skip
    assert summary.chunks_total == 8


def test_a_changed_file_is_rechunked_and_reembedded_alone(demo, server):
    config = configure(demo, server.base_url)
    build_index(config, progress=False)
    before = chunk_ids(config.db_path)
    requests = len(server.embedding_requests())
    (demo / "web" / "util.ts").write_text(UTIL + "\nexport const VERSION = 2;\n")
    (demo / "README.md").unlink()
    (demo / "src" / "extra.py").write_text("def extra():\n    return 42\n")
    summary = build_index(config, progress=False)
    after = chunk_ids(config.db_path)
    # Unchanged file: same rows, same ids. Changed file: new chunks. Deleted file: gone, with its vectors.
    assert {k: v for k, v in after.items() if k[0] == "src/app.py"} == {
        k: v for k, v in before.items() if k[0] == "src/app.py"
    }
    assert sorted(k for k in after if k[0] == "web/util.ts") == [
        ("web/util.ts", "VERSION", 5), ("web/util.ts", "slugify", 1),
    ]  # fmt: skip
    assert not [k for k in after if k[0] == "README.md"]
    assert [r[0] for r in rows(config.db_path, "SELECT path FROM files ORDER BY path")] == [
        "src/app.py", "src/extra.py", "web/util.ts",
    ]  # fmt: skip
    sent = texts_sent(server, requests)
    assert sorted(sent) == sorted(["def extra():\n    return 42", UTIL.rstrip("\n"), "export const VERSION = 2;"])
    assert rows(config.db_path, "SELECT count(*) FROM embeddings_1536") == [(len(after),)]
    orphans = rows(config.db_path, "SELECT count(*) FROM embeddings_1536 WHERE chunk_id NOT IN (SELECT id FROM chunks)")
    assert orphans == [(0,)]
    assert (summary.files_indexed, summary.files_unchanged, summary.files_removed) == (2, 1, 1)
    assert summary.embeddings_written == 3


def test_a_touched_but_unchanged_file_is_not_rechunked(demo, server):
    config = configure(demo, server.base_url)
    build_index(config, progress=False)
    before = chunk_ids(config.db_path)
    requests = len(server.embedding_requests())
    later = time.time() + 100
    os.utime(demo / "src" / "app.py", (later, later))
    summary = build_index(config, progress=False)
    assert chunk_ids(config.db_path) == before
    assert len(server.embedding_requests()) == requests
    stored = rows(config.db_path, "SELECT epoch(modified_time::TIMESTAMPTZ) FROM files WHERE path = 'src/app.py'")
    assert abs(stored[0][0] - later) < 1e-5  # refreshed, so the next run need not hash it again
    assert (summary.files_indexed, summary.files_unchanged) == (0, 3)


def test_no_embeddings_stores_chunks_only_and_a_later_run_adds_the_vectors(demo, server):
    config = configure(demo, server.base_url)
    requests = len(server.embedding_requests())
    summary = build_index(config, embeddings=False, progress=False)
    db = config.db_path
    assert len(server.embedding_requests()) == requests
    assert sorted(r[0] for r in rows(db, "SELECT table_name FROM duckdb_tables()")) == [
        "chunks", "files", "schema_version",
    ]  # fmt: skip
    assert not db.with_name("chunks.db.embedding.json").exists()
    assert (summary.chunks_total, summary.embeddings_written, summary.dims) == (8, 0, None)
    assert "slugify" in onetool_code.search(query="slugify", path=str(demo), mode="lexical")
    before = chunk_ids(db)
    summary = build_index(config, progress=False)
    assert chunk_ids(db) == before
    assert summary.embeddings_written == 8 and summary.chunks_written == 0
    assert rows(db, "SELECT count(*) FROM embeddings_1536") == [(8,)]
    assert db.with_name("chunks.db.embedding.json").exists()


def test_another_model_adds_its_own_vectors_beside_the_first(demo, server):
    build_index(configure(demo, server.base_url), progress=False)
    summary = build_index(configure(demo, server.base_url, model="text-embedding-3-large"), progress=False)
    db = summary.db_path
    assert summary.dims == 3072 and summary.embeddings_written == 8
    assert rows(db, "SELECT provider, model, count(*) FROM embeddings_1536 GROUP BY ALL") == [("openai", MODEL, 8)]
    assert rows(db, "SELECT model, count(*) FROM embeddings_3072 GROUP BY ALL") == [("text-embedding-3-large", 8)]
    assert json.loads(db.with_name("chunks.db.embedding.json").read_text())["dims"] == 3072


def test_a_custom_index_location_inside_the_project_is_not_indexed(demo, server):
    config = configure(demo, server.base_url, db="index/code.db")
    build_index(config, progress=False)
    assert config.db_path == demo / "index" / "code.db"
    summary = build_index(config, progress=False)
    assert summary.files_seen == 3  # not code.db.root.json / code.db.embedding.json
    assert (demo / "index" / "code.db.root.json").exists()


# -- skipped files -------------------------------------------------------------------------------------------


def test_odd_files_are_skipped_and_counted_never_fatal(demo, server):
    (demo / "blob.py").write_bytes(b"x = 1\n\x00\x01\x02\x03")
    generated = demo / "src" / "generated_parser.js"
    with generated.open("w") as handle:  # a 10 MB generated file
        handle.write("// Code generated by parsergen. DO NOT EDIT.\n")
        line = "export const table_%06d = [" + ", ".join(str(i) for i in range(60)) + "];\n"
        while handle.tell() < 10_000_000:
            handle.write(line % handle.tell())
    os.mkfifo(demo / "pipe.py")
    (demo / "dangling.py").symlink_to(demo / "nowhere.py")
    (demo / "src" / "loop").symlink_to(demo / "src")
    (demo / "minified.js").write_text("var a=1;" * 3000)
    summary = build_index(configure(demo, server.base_url), progress=False)
    assert summary.files_indexed == 3
    assert dict(summary.skipped_reasons) == {
        "binary": 1, "generated": 2, "not a regular file": 1, "unreadable": 1, "symlink loop": 1,
    }  # fmt: skip
    assert summary.files_skipped == 6 and summary.files_seen == 9
    assert "6 skipped (2 generated, 1 binary" in summary.describe()


def test_huge_files_are_skipped_before_they_are_read(demo, server):
    (demo / "big.py").write_text("x = 1\n" * 300_000)
    summary = build_index(configure(demo, server.base_url), progress=False, max_file_size=1_000_000)
    assert dict(summary.skipped_reasons) == {"too large": 1}
    assert summary.files_indexed == 3


def test_a_file_that_becomes_binary_is_removed_from_the_index(demo, server):
    config = configure(demo, server.base_url)
    build_index(config, progress=False)
    (demo / "src" / "app.py").write_bytes(b"\x00" * 100)
    summary = build_index(config, progress=False)
    assert summary.files_removed == 1
    assert [r[0] for r in rows(config.db_path, "SELECT path FROM files ORDER BY path")] == ["README.md", "web/util.ts"]


# -- errors --------------------------------------------------------------------------------------------------


def test_a_missing_project_directory_is_bad_input(tmp_path, server):
    config = configure(tmp_path, server.base_url)
    missing = settings.Settings(**{**config.__dict__, "project_root": tmp_path / "missing"})
    with pytest.raises(BadInputError, match="Project path does not exist") as raised:
        build_index(missing, progress=False)
    assert raised.value.exit_code == 2


def test_a_file_instead_of_a_directory_is_bad_input(demo, server):
    config = configure(demo, server.base_url)
    a_file = settings.Settings(**{**config.__dict__, "project_root": demo / "README.md"})
    with pytest.raises(BadInputError, match="not a directory"):
        build_index(a_file, progress=False)


def test_an_index_of_another_project_is_refused(demo, tmp_path, server):
    build_index(configure(demo, server.base_url), progress=False)
    moved = tmp_path / "moved"
    shutil.copytree(demo, moved)
    with pytest.raises(OneToolCodeError, match=f"belongs to another project: chunks.db.root.json names {demo}"):
        build_index(configure(moved, server.base_url), progress=False)


def test_a_foreign_duckdb_file_is_refused(demo, server):
    db = demo / ".chunkhound" / "db" / "chunks.db"
    db.parent.mkdir(parents=True)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE something_else (x INTEGER)")
    con.close()
    before = db.read_bytes()
    with pytest.raises(IndexUnreadableError, match="is not a ChunkHound index"):
        build_index(configure(demo, server.base_url), progress=False)
    assert db.read_bytes() == before


def test_an_index_held_by_another_process_is_reported_as_locked(demo, server):
    config = configure(demo, server.base_url)
    build_index(config, embeddings=False, progress=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); "
         "sys.stdin.read()", str(config.db_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        (demo / "src" / "app.py").write_text(APP + "\nX = 1\n")
        started = time.monotonic()
        with pytest.raises(IndexLockedError) as raised:
            build_index(config, embeddings=False, progress=False)
        assert time.monotonic() - started < 5
        assert str(raised.value).startswith("the index is in use by ChunkHound (python")
        assert f"PID {holder.pid}): it holds {config.db_path} read-write right now." in str(raised.value)
    finally:
        holder.communicate(timeout=10)  # closes stdin (the holder exits) and the pipes


def test_an_embeddings_failure_writes_nothing(demo, server):
    config = configure(demo, server.url("fail401"))
    with pytest.raises(EmbeddingError, match="rejected the API key"):
        build_index(config, progress=False)
    assert not config.db_path.exists()
    build_index(configure(demo, server.base_url), progress=False)
    before = config.db_path.read_bytes()
    (demo / "src" / "app.py").write_text(APP + "\nX = 1\n")
    with pytest.raises(EmbeddingError):
        build_index(config, progress=False)
    assert config.db_path.read_bytes() == before


# -- interruption --------------------------------------------------------------------------------------------

CHILD = """
import sys, time
from onetool_code import settings
from onetool_code.indexer import build_index, writer

if sys.argv[3] == "in-transaction":
    original = writer._insert_vectors

    def pause(*args, **kwargs):
        original(*args, **kwargs)
        print("inside the write transaction", flush=True)
        time.sleep(120)

    writer._insert_vectors = pause
build_index(settings.resolve(path=sys.argv[1], base_url=sys.argv[2]), progress=False)
print("finished", flush=True)
"""


@pytest.mark.parametrize("moment", ["embedding", "in-transaction"])
def test_a_killed_run_leaves_the_previous_index_usable(demo, moment):
    with serve() as server:
        server.slow_seconds = 60
        config = configure(demo, server.base_url)
        build_index(config, progress=False)
        previous = rows(config.db_path, "SELECT id, path, content_hash FROM files ORDER BY id")
        previous_chunks = chunk_ids(config.db_path)
        (demo / "src" / "app.py").write_text(APP + "\n\ndef added():\n    return 'new'\n")
        (demo / "web" / "util.ts").unlink()
        (demo / "more.py").write_text("def more():\n    return 1\n")
        base_url = server.url("slow") if moment == "embedding" else server.base_url
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(demo), base_url, moment],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            if moment == "embedding":
                deadline = time.monotonic() + 60
                while not [r for r in server.embedding_requests() if r.path.startswith("/slow/")]:
                    assert time.monotonic() < deadline and child.poll() is None, child.communicate()
                    time.sleep(0.05)
            else:
                assert child.stdout is not None
                assert child.stdout.readline().strip() == "inside the write transaction", child.communicate()
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.communicate(timeout=30)
        assert child.returncode == -signal.SIGKILL
        # The previous index, exactly: same files, same chunks, and it answers searches.
        assert rows(config.db_path, "SELECT id, path, content_hash FROM files ORDER BY id") == previous
        assert chunk_ids(config.db_path) == previous_chunks
        found = onetool_code.search(query="read the configuration file", path=str(demo), base_url=server.base_url)
        assert "load_config" in found
        assert "slugify" in onetool_code.search(query="slugify", path=str(demo), mode="lexical")
        # And the next run completes the job.
        summary = build_index(config, progress=False)
        assert (summary.files_indexed, summary.files_removed, summary.files_unchanged) == (2, 1, 1)
        assert "added" in {k[1] for k in chunk_ids(config.db_path)}


def test_a_killed_first_build_leaves_an_empty_index_that_the_next_run_fills(demo):
    with serve() as server:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(demo), server.base_url, "in-transaction"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "inside the write transaction", child.communicate()
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.communicate(timeout=30)
        db = demo / ".chunkhound" / "db" / "chunks.db"
        assert rows(db, "SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks)") == [(0, 0)]
        # The empty index answers nothing of its own; the checkout laid over it answers for the files (issue 37).
        found = onetool_code.search(query="slugify", path=str(demo), mode="lexical")
        assert "0 deleted since indexing: searched as they are now" in found
        summary = build_index(configure(demo, server.base_url), progress=False)
        assert (summary.files_indexed, summary.chunks_total, summary.embeddings_written) == (3, 8, 8)


# -- progress bar and span -----------------------------------------------------------------------------------


def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(demo, server, capsys):
    config = configure(demo, server.base_url)
    build_index(config, progress=None)  # pytest's stderr is not a terminal: quiet
    assert capsys.readouterr() == ("", "")
    (demo / "src" / "app.py").write_text(APP + "\nX = 1\n")
    build_index(config, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "chunking" in err and "embedding" in err and "writing" in err and "1/1" in err
    assert err.endswith("\r\033[K")


def test_one_span_per_build(demo, server, spans):
    build_index(configure(demo, server.base_url), progress=False)
    records = [json.loads(r.getMessage()) for r in spans]
    builds = [r for r in records if r.get("span") == "code.index.build"]
    assert len(builds) == 1
    assert builds[0]["path"] == str(demo)
    assert (builds[0]["fileCount"], builds[0]["chunkCount"], builds[0]["status"]) == (3, 8, "SUCCESS")


def test_a_failed_build_has_a_failed_span(tmp_path, server, spans):
    config = configure(tmp_path, server.base_url)
    with pytest.raises(BadInputError):
        build_index(settings.Settings(**{**config.__dict__, "project_root": tmp_path / "nope"}), progress=False)
    (record,) = [json.loads(r.getMessage()) for r in spans if "code.index.build" in r.getMessage()]
    assert (record["status"], record["errorType"]) == ("FAILED", "BadInputError")


# -- the sample project --------------------------------------------------------------------------------------


def test_the_sample_project_indexes_every_language(tmp_path, server):
    root = tmp_path / "project"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    summary = build_index(configure(root, server.base_url), progress=False)
    db = summary.db_path
    languages = dict(rows(db, "SELECT language, count(*) FROM files GROUP BY ALL"))
    assert {"python", "typescript", "tsx", "javascript", "go", "rust", "java", "markdown"} <= set(languages)
    types = {r[0] for r in rows(db, "SELECT DISTINCT chunk_type FROM chunks")}
    assert types <= set(schema.CHUNK_TYPES)
    assert {"function", "method", "class", "interface", "enum", "import", "comment", "header_1"} <= types
    assert summary.files_skipped == 0 and summary.chunks_total == summary.embeddings_written
    assert not rows(db, "SELECT path FROM files WHERE path LIKE 'build/%' OR path LIKE '%.log'")
    assert all("/" not in p[:1] and "\\" not in p for (p,) in rows(db, "SELECT path FROM files"))


def test_a_latin1_file_is_chunked_as_chunkhound_reads_it_and_shown_without_a_note(tmp_path, server):
    """ChunkHound falls back to Latin-1 for a file that is not UTF-8: the chunk text is that text (no
    replacement characters), and the reader, decoding the same way, finds the file unchanged."""
    (tmp_path / "legacy.py").write_bytes(b'# caf\xe9\n\n\ndef cr\xe8me_br\xfbl\xe9e():\n    return "\xe0 la carte"\n')
    db = build_index(configure(tmp_path, server.base_url), embeddings=False, progress=False).db_path
    (code,) = [c for (c,) in rows(db, "SELECT code FROM chunks WHERE chunk_type = 'function'")]
    assert code == 'def cr\xe8me_br\xfbl\xe9e():\n    return "\xe0 la carte"'
    (item,) = onetool_code.search(query="carte", path=str(tmp_path), mode="lexical", format="json")["results"]
    assert (item["start_line"], item["end_line"], item.get("note")) == (4, 5, None)
    assert item["preview"].endswith('return "\xe0 la carte"')
