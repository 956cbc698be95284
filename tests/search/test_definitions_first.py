"""Definitions first in a repository cut as ChunkHound cuts a big one (issue 18): ``Class.method`` resolves to the
method inside that class, a definition ChunkHound split into ``_partN`` pieces or put into its neighbour's chunk
is one result shown whole from its ``def`` line, and a page merged down to a few results is filled from further
down the ranking.

The index is written row by row with ChunkHound's exact schema, with the cuts measured on Django 5.1.4 as
ChunkHound 6.1.0 indexed it: a long method as ``bulk_create_part1``/``_part2``, a class as windows named
``QuerySet_part1``/``_part2``, and a short method inside the chunk named after the method above it.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from conftest import ranked
from test_snapshot_answers import write_index

import onetool_code

BODY = "\n".join(f"        step_{n} = objs[{n}] if len(objs) > {n} else None" for n in range(40))
QUERY_PY = f'''class QuerySet:
    def items(self):
        return list(self)

    def set_cookie(self, key, value):
        self.cookies[key] = value
        return value

    def bulk_create(self, objs, batch_size=None):
        """Insert each of the given objects into the database, in batches."""
{BODY}
        return objs


class Manager:
    def bulk_create(self, objs):
        return self.get_queryset().bulk_create(objs)
'''
TESTS_PY = "\n\n".join(
    f"def test_bulk_create_{n}(queryset):\n    objs = [object()] * {n}\n    assert queryset.bulk_create(objs) == objs"
    for n in range(30)
)
NOTES = "\n\n".join(f"Call QuerySet.bulk_create and set_cookie in release {n}." for n in range(10))


def _chunk(lines: list[str], file_id: int, chunk_type: str, symbol: str, start: int, end: int) -> tuple:
    return file_id, chunk_type, symbol, "\n".join(lines[start - 1 : end]), start, end


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("definitions-first")
    texts = {"shop/query.py": QUERY_PY, "tests/test_bulk.py": TESTS_PY, "docs/notes.txt": NOTES}
    for path, text in texts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    query = QUERY_PY.split("\n")
    bulk = query.index("    def bulk_create(self, objs, batch_size=None):") + 1
    bulk_end = query.index("        return objs") + 1
    manager = query.index("class Manager:") + 1
    middle = (bulk + bulk_end) // 2
    rows = [
        # ChunkHound put set_cookie into the chunk named after the method above it.
        _chunk(query, 1, "function", "items", 2, 7),
        _chunk(query, 1, "function", "bulk_create_part1", bulk, middle),
        _chunk(query, 1, "function", "bulk_create_part2", middle + 1, bulk_end),
        _chunk(query, 1, "class", "QuerySet_part1", 1, bulk + 5),
        _chunk(query, 1, "class", "QuerySet_part2", bulk + 6, bulk_end),
        _chunk(query, 1, "class", "Manager", manager, manager + 2),
        _chunk(query, 1, "function", "bulk_create", manager + 1, manager + 2),
    ]
    test_lines = TESTS_PY.split("\n")
    rows += [_chunk(test_lines, 2, "function", f"test_bulk_create_{n}", 5 * n + 1, 5 * n + 3) for n in range(30)]
    note_lines = NOTES.split("\n")
    rows += [_chunk(note_lines, 3, "paragraph", f"paragraph_{n}", 2 * n + 1, 2 * n + 1) for n in range(10)]
    files = [(1, "shop/query.py", "python"), (2, "tests/test_bulk.py", "python"), (3, "docs/notes.txt", "text")]
    _index(root, files, rows)
    return root


def _index(root: Path, files: list[tuple[int, str, str]], rows: list[tuple]) -> None:
    """An index of these chunk rows (``_chunk``'s), written with ChunkHound's schema and no vectors."""
    columns = list(zip(*rows, strict=True))
    chunks = {
        "id": np.arange(1, len(rows) + 1, dtype=np.int32),
        "file_id": np.array(columns[0], dtype=np.int32),
        "chunk_type": np.array(columns[1], dtype=object),
        "symbol": np.array(columns[2], dtype=object),
        "code": np.array(columns[3], dtype=object),
        "start_line": np.array(columns[4], dtype=np.int32),
        "end_line": np.array(columns[5], dtype=np.int32),
    }
    write_index(root / ".chunkhound" / "db" / "chunks.db", files, chunks, [])


def results(root: Path, query: str, **options) -> dict:
    answer = onetool_code.search(query=query, path=str(root), format="json", **options)
    assert "results" in answer, answer
    return answer


def first(root: Path, query: str, **options) -> tuple[str, int, int, str]:
    top = results(root, query, **options)["results"][0]
    return top["file_path"], top["start_line"], top["end_line"], top["name"]


def line_of(text: str, line: str) -> int:
    return text.split("\n").index(line) + 1


@pytest.mark.parametrize("cache", [True, False])
def test_a_split_method_is_one_result_shown_whole_from_its_def_line(project, cache):
    start = line_of(QUERY_PY, "    def bulk_create(self, objs, batch_size=None):")
    end = line_of(QUERY_PY, "        return objs")
    assert first(project, "QuerySet.bulk_create", cache=cache) == ("shop/query.py", start, end, "bulk_create")
    shown = [
        (r["file_path"], r["start_line"]) for r in results(project, "QuerySet.bulk_create", cache=cache)["results"]
    ]
    assert shown.count(("shop/query.py", start)) == 1


@pytest.mark.parametrize("cache", [True, False])
def test_the_qualifier_picks_the_method_of_that_class(project, cache):
    manager = line_of(QUERY_PY, "    def bulk_create(self, objs):")
    assert first(project, "Manager.bulk_create", cache=cache) == ("shop/query.py", manager, manager + 1, "bulk_create")


@pytest.mark.parametrize("cache", [True, False])
def test_a_method_inside_its_neighbours_chunk_is_found_and_shown_alone(project, cache):
    start = line_of(QUERY_PY, "    def set_cookie(self, key, value):")
    assert first(project, "QuerySet.set_cookie", cache=cache) == ("shop/query.py", start, start + 2, "set_cookie")


def test_definitions_come_before_tests_and_docs_unless_tests_are_asked_for(project):
    assert first(project, "bulk_create")[0] == "shop/query.py"
    assert first(project, "tests for bulk_create")[0] == "tests/test_bulk.py"


def test_a_page_merged_down_is_filled_from_further_down_and_pages_stay_disjoint(project):
    page = results(project, "QuerySet.bulk_create", limit=5)
    assert len(page["results"]) == 5 and page["next_offset"] > 5  # more than 5 hits went into 5 results
    following = results(project, "QuerySet.bulk_create", limit=5, offset=page["next_offset"])
    seen = {(r["file_path"], r["start_line"]) for r in page["results"]}
    assert not seen & {(r["file_path"], r["start_line"]) for r in following["results"]}


@pytest.mark.parametrize(
    "query", ["QuerySet.bulk_create", "bulk_create", "QuerySet", "set_cookie", "items bulk_create"]
)
def test_no_line_is_shown_twice_and_no_line_of_a_hit_is_lost(project, query):
    """ChunkHound stores a class's windows beside its methods, and a definition shown whole spans both: each line
    is shown once, and the lines of a window beside the definition stay in the answer, as a place of its own."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in results(project, query, limit=20)["results"]:
        spans.setdefault(r["file_path"], []).append((r["start_line"], r["end_line"]))
    for ranges in spans.values():
        ranges.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges
    lines = QUERY_PY.split("\n")
    for hit in ranked(project, None, query, mode="hybrid", limit=20).hits:
        if hit.file_path == "shop/query.py" and not hit.defines:
            wanted = {n for n in range(hit.start_line, hit.end_line + 1) if lines[n - 1].strip()}
            assert wanted <= {n for a, b in spans[hit.file_path] for n in range(a, b + 1)}, (hit.symbol, spans)


def test_a_long_definition_is_shown_by_the_part_that_matched(tmp_path):
    """A 4,700-line class shown whole would be the whole answer: past 300 lines it is the chunk that matched."""
    methods = "\n".join(f"    def handler_{n}(self):\n        return {n}\n" for n in range(200))
    source = (
        f"class FastAPI:\n{methods}\n    def run_sync(self, endpoint):\n        return run_in_threadpool(endpoint)\n"
    )
    lines = source.split("\n")
    start = lines.index("    def run_sync(self, endpoint):") + 1
    (tmp_path / "app.py").write_text(source)
    rows = [  # ChunkHound's windows of a long class, each well under the cap, together far over it
        _chunk(lines, 1, "class", "FastAPI_part1", 1, 250),
        _chunk(lines, 1, "class", "FastAPI_part2", 251, 500),
        _chunk(lines, 1, "class", "FastAPI_part3", 501, start + 1),
        _chunk(lines, 1, "method", "run_sync", start, start + 1),
    ]
    _index(tmp_path, [(1, "app.py", "python")], rows)
    for result in results(tmp_path, "FastAPI run sync")["results"]:
        assert result["end_line"] - result["start_line"] < 300, result


def test_two_definitions_side_by_side_are_two_results(tmp_path):
    """``get_or_set`` and ``aget_or_set`` one blank line apart: the second is its own result, not lost in the
    first."""
    source = (
        "class BaseCache:\n    def get_or_set(self, key, default):\n        return self.get(key) or default\n\n"
        "    async def aget_or_set(self, key, default):\n        return await self.aget(key) or default\n"
    )
    lines = source.split("\n")
    (tmp_path / "base.py").write_text(source)
    rows = [_chunk(lines, 1, "method", "get_or_set", 2, 3), _chunk(lines, 1, "method", "aget_or_set", 5, 6)]
    _index(tmp_path, [(1, "base.py", "python")], rows)
    shown = {
        (r["name"], r["start_line"], r["end_line"]) for r in results(tmp_path, "get_or_set aget_or_set")["results"]
    }
    assert shown == {("get_or_set", 2, 3), ("aget_or_set", 5, 6)}
