"""Compatibility with the real ChunkHound 6.1.0 (in its own cached virtual environment): same ranking, and
neither side locks the other out when it should not."""

from __future__ import annotations

import pytest
from conftest import ranked

import onetool_code

pytestmark = pytest.mark.chunkhound

QUERIES = [
    "retry with exponential backoff",
    "parse configuration file",
    "UserSession",
    "rate limiter token bucket",
    "HTTP route handler for books",
    "LoanService",
]


def ours(project, query, include=None):
    return ranked(project.root, project.base_url, query, include=include).hits


def assert_same_hits(mine, theirs):
    assert len(mine) == len(theirs) == 10
    for a, b in zip(mine, theirs, strict=True):
        assert abs(a.score - b.score) < 1e-4, (a, b)
    # ChunkHound leaves equal scores in any order; we break ties by path and line: compare per score.
    key = lambda path, start, end, score: (round(score, 4), path, start, end)  # noqa: E731
    assert sorted(key(h.file_path, h.start_line, h.end_line, h.score) for h in mine) == sorted(
        key(h.path, h.start_line, h.end_line, h.score) for h in theirs
    )


@pytest.mark.parametrize("query", QUERIES)
def test_top_10_matches_chunkhound_search(chunkhound, chunkhound_project, query):
    before = chunkhound_project.digest()
    theirs = chunkhound.search(chunkhound_project.root, query, base_url=chunkhound_project.base_url)
    assert_same_hits(ours(chunkhound_project, query), theirs)
    assert chunkhound_project.digest() == before


@pytest.mark.parametrize("query", QUERIES[:3])
def test_top_10_with_a_path_filter_matches(chunkhound, chunkhound_project, query):
    # ChunkHound's path filter is CONCAT('/', path) LIKE '%/src/%'; for this tree that is our include="src/".
    theirs = chunkhound.search(chunkhound_project.root, query, base_url=chunkhound_project.base_url, path_filter="src")
    mine = ours(chunkhound_project, query, include="src/")
    assert all("src/" in h.file_path for h in mine)
    assert_same_hits(mine, theirs)


def test_our_answer_over_chunkhounds_index_is_well_formed(chunkhound_project):
    text = onetool_code.search(query="retry with exponential backoff", path=str(chunkhound_project.root),
                               base_url=chunkhound_project.base_url)  # fmt: skip
    assert text.startswith("Found ") and len(text.encode()) <= 5000 and "changed since indexing" not in text
    assert "Error" not in onetool_code.status(path=str(chunkhound_project.root))


@pytest.mark.parametrize("pattern", [r"def \w+_config", r"class \w+(Service|Store)", "RateLimiter"])
def test_regex_mode_matches_chunkhounds_regex_search(chunkhound, chunkhound_project, pattern):
    theirs = chunkhound.search(chunkhound_project.root, pattern, regex=True, page_size=20)
    mine = ranked(chunkhound_project.root, None, pattern, mode="regex", limit=20).hits
    assert mine and len(mine) == len(theirs)
    # ChunkHound orders regex hits by path and start line too; its ties (one range, two chunks) are unordered.
    assert sorted((h.file_path, h.start_line, h.end_line) for h in mine) == sorted(
        (h.path, h.start_line, h.end_line) for h in theirs
    )


def test_a_reader_never_blocks_the_next_chunkhound_index(chunkhound, chunkhound_project):
    root = str(chunkhound_project.root)
    for mode in ("hybrid", "lexical"):  # the lexical index of this state of the file is built now
        onetool_code.search(query="cache eviction", path=root, base_url=chunkhound_project.base_url, mode=mode)
    onetool_code.status(path=root)
    (chunkhound_project.root / "src" / "bookshelf" / "new_module.py").write_text(
        "def freshly_added():\n    return 42\n"
    )
    chunkhound.index(chunkhound_project.root, chunkhound_project.base_url)  # raises if the index was locked
    found = onetool_code.search(query="freshly_added", path=root, mode="lexical", format="json")
    assert found["results"][0]["file_path"] == "src/bookshelf/new_module.py"  # the lexical index was rebuilt
    found = onetool_code.search(query="freshly_added", path=root, base_url=chunkhound_project.base_url, format="json")
    assert found["results"][0]["file_path"] == "src/bookshelf/new_module.py"


def test_a_chunkhound_writer_gives_our_clear_error(chunkhound, chunkhound_project):
    with chunkhound.hold_write_lock(chunkhound_project.db) as holder:
        answer = onetool_code.search(query="retry", path=str(chunkhound_project.root), mode="lexical")
    assert answer.startswith("Error: the index is in use by ChunkHound (")
    assert f"PID {holder.pid})" in answer and "chunkhound mcp --read-only" in answer
