"""Our indexer against the real ChunkHound 6.1.0 (in its own cached virtual environment).

- Schema: the tables, indexes and sequences of our index equal those of the index ChunkHound writes for the
  same sample project. Normalised: sequence positions (``START n``, ``last_value``: they count rows), and the
  HNSW index, which we create only where the vss extension is installed (our duckdb 2.x has none; the test that
  runs our indexer inside ChunkHound's venv, where vss is installed, compares with it included).
- File rows: the same paths, sizes, mtimes and xxh3 content hashes, so ChunkHound takes our index over
  without re-indexing a file.
- Search: ``chunkhound search`` (semantic and regex) answers from an index we wrote, with the same top 10 as
  our reader.
Each ChunkHound command costs 5-10 s of start-up; the module makes seven.
"""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import duckdb
import pytest
from conftest import SAMPLE, ranked, sha256
from tooling.chunkhound_env import ensure_chunkhound

from onetool_code import settings
from onetool_code.errors import OneToolCodeError
from onetool_code.indexer import build_index

pytestmark = pytest.mark.chunkhound

REPO = Path(__file__).resolve().parents[2]
QUERIES = ["retry with exponential backoff", "rate limiter token bucket", "parse configuration file"]

# Run our indexer with ChunkHound's duckdb 1.5.4 and its installed vss extension: that venv has every
# dependency of ours except structlog, which is pure Python and is borrowed from ours.
BUILD_IN_CHUNKHOUND_VENV = """
import sys
from onetool_code import settings
from onetool_code.indexer import build_index
summary = build_index(settings.resolve(path=sys.argv[1], base_url=sys.argv[2]), progress=False)
print("hnsw" if summary.hnsw else "no hnsw")
"""


@pytest.fixture(scope="module")
def chunkhound():
    return ensure_chunkhound()


def copy_sample(root: Path) -> Path:
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    return root


@pytest.fixture(scope="module")
def their_db(chunkhound, server, tmp_path_factory) -> Path:
    """The sample project indexed by ChunkHound itself, vectors from the test server."""
    root = copy_sample(tmp_path_factory.mktemp("theirs") / "project")
    chunkhound.index(root, server.base_url)
    return root / ".chunkhound" / "db" / "chunks.db"


@pytest.fixture(scope="module")
def our_db(server, tmp_path_factory) -> Path:
    root = copy_sample(tmp_path_factory.mktemp("ours") / "project")
    return build_index(settings.resolve(path=str(root), base_url=server.base_url), progress=False).db_path


def catalog(db: Path, *, hnsw: bool = True) -> dict[str, list[tuple]]:
    """What a reader can see of the schema, with the data-dependent parts removed."""
    con = duckdb.connect(str(db), read_only=True, config={"autoload_known_extensions": False})
    try:
        tables = con.execute("SELECT table_name, sql FROM duckdb_tables() ORDER BY 1").fetchall()
        columns = con.execute(
            "SELECT table_name, column_name, column_index, data_type, column_default, is_nullable "
            "FROM duckdb_columns() ORDER BY 1, 3"
        ).fetchall()
        indexes = con.execute(
            "SELECT index_name, table_name, is_unique, sql FROM duckdb_indexes() ORDER BY 1"
        ).fetchall()
        sequences = con.execute(
            "SELECT sequence_name, min_value, max_value, increment_by, cycle, sql FROM duckdb_sequences() ORDER BY 1"
        ).fetchall()
        versions = con.execute("SELECT version, description FROM schema_version").fetchall()
    finally:
        con.close()
    return {
        "tables": tables,
        "columns": columns,
        "indexes": [i for i in indexes if hnsw or not i[0].startswith("idx_hnsw_")],
        "sequences": [(*s[:5], re.sub(r" START \d+", " START n", s[5])) for s in sequences],
        "schema_version": versions,
    }


def storage_version(db: Path) -> int:
    return struct.unpack("<Q", db.read_bytes()[12:20])[0]


def test_schema_equals_chunkhounds_without_the_hnsw_index(their_db, our_db):
    theirs, ours = catalog(their_db, hnsw=False), catalog(our_db)
    assert ours == theirs
    assert [i[0] for i in catalog(their_db)["indexes"] if i[0].startswith("idx_hnsw")] == ["idx_hnsw_1536"]
    assert storage_version(our_db) == storage_version(their_db) == 64


def test_file_rows_equal_chunkhounds(their_db, our_db):
    sql = "SELECT path, name, extension, size, epoch(modified_time::TIMESTAMPTZ), content_hash, language FROM files"

    def files(db: Path) -> dict[str, tuple]:
        con = duckdb.connect(str(db), read_only=True, config={"autoload_known_extensions": False})
        try:
            return {row[0]: row for row in con.execute(sql).fetchall()}
        finally:
            con.close()

    theirs, ours = files(their_db), files(our_db)
    # The sample's .gitignore only names files that ChunkHound's default excludes or unknown extensions drop
    # anyway; ChunkHound ignores .gitignore outside git repositories, we do not.
    assert sorted(ours) == sorted(theirs)
    for path, row in ours.items():
        assert row[:4] == theirs[path][:4] and row[5:] == theirs[path][5:], path
        assert abs(row[4] - theirs[path][4]) < 1e-5, path


def test_chunkhound_takes_over_our_index_without_reindexing(chunkhound, server, tmp_path):
    root = copy_sample(tmp_path / "project")
    build_index(settings.resolve(path=str(root), base_url=server.base_url), progress=False)
    run = chunkhound.index_no_embeddings(root)
    assert "Processed: 0 files" in run.stdout, run.stdout
    assert "Errors: 0 files" in run.stdout


def our_hits(root: Path, base_url: str, query: str) -> list:
    return ranked(root, base_url, query).hits


@pytest.mark.parametrize("query", QUERIES[:2])
def test_chunkhound_search_on_our_index_finds_what_our_reader_finds(chunkhound, server, tmp_path, query):
    root = copy_sample(tmp_path / "project")
    build_index(settings.resolve(path=str(root), base_url=server.base_url), progress=False)
    mine = our_hits(root, server.base_url, query)
    theirs = chunkhound.search(root, query, base_url=server.base_url)
    assert len(mine) == len(theirs) == 10
    for a, b in zip(mine, theirs, strict=True):
        assert abs(a.score - b.score) < 1e-4, (a, b)
    # ChunkHound leaves equal scores in any order; we break ties by path and line: compare per score.
    assert sorted((round(h.score, 4), h.file_path, h.start_line, h.end_line) for h in mine) == sorted(
        (round(h.score, 4), h.path, h.start_line, h.end_line) for h in theirs
    )


def test_chunkhound_regex_search_on_our_index(chunkhound, tmp_path):
    root = copy_sample(tmp_path / "project")
    build_index(settings.resolve(path=str(root)), embeddings=False, progress=False)
    hits = chunkhound.search(root, r"class \w+Error", regex=True, page_size=50)
    assert hits
    assert all(re.search(r"class \w+Error", h.content or "") for h in hits)
    assert {h.path for h in hits} >= {"src/bookshelf/errors.py"}


def test_with_vss_our_index_has_chunkhounds_hnsw_index_and_without_it_we_refuse_then_drop(
    chunkhound, server, their_db, tmp_path
):
    root = copy_sample(tmp_path / "project")
    shim = tmp_path / "shim"
    shim.mkdir()
    import structlog

    (shim / "structlog").symlink_to(Path(structlog.__file__).parent)
    run = chunkhound.run_python(
        BUILD_IN_CHUNKHOUND_VENV, str(root), server.base_url, env={"PYTHONPATH": f"{REPO}:{shim}"}
    )
    assert run.returncode == 0 and run.stdout.strip() == "hnsw", run.stderr
    db = root / ".chunkhound" / "db" / "chunks.db"
    assert catalog(db) == catalog(their_db)  # HNSW index included

    # Here (duckdb 2.x, no vss) that index cannot be updated: refuse before writing a byte, whether the
    # write would be new chunks or only vectors of another model of the same size for unchanged files.
    before = sha256(db)
    other_model = settings.resolve(path=str(root), base_url=server.base_url, model="text-embedding-ada-002")
    with pytest.raises(OneToolCodeError, match=r"HNSW vector index \(idx_hnsw_1536\)"):
        build_index(other_model, progress=False)
    (root / "src" / "bookshelf" / "retry.py").write_text("def retry():\n    return 'changed'\n")
    config = settings.resolve(path=str(root), base_url=server.base_url)
    with pytest.raises(OneToolCodeError, match=r"HNSW vector index \(idx_hnsw_1536\).*--drop-hnsw"):
        build_index(config, progress=False)
    assert sha256(db) == before
    summary = build_index(config, progress=False, drop_hnsw=True)
    assert (summary.files_indexed, summary.hnsw) == (1, False)
    # ChunkHound still reads it (and puts its HNSW index back).
    hits = chunkhound.search(root, "retry changed", base_url=server.base_url, page_size=3)
    assert hits[0].path == "src/bookshelf/retry.py"
    assert [i[0] for i in catalog(db)["indexes"] if i[0].startswith("idx_hnsw")] == ["idx_hnsw_1536"]
