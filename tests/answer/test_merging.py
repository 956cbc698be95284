"""No two results of one answer share a line, where ChunkHound's chunks overlap or a definition is shown whole
(issue 36, item 9): on an index with ChunkHound's schema holding exactly the chunks written here
(``conftest.chunked_index``), and over random placed hits."""

from __future__ import annotations

import itertools

from conftest import chunked_index
from hypothesis import given, settings
from hypothesis import strategies as st

import onetool_code
from onetool_code.answer.merging import Placed, merge
from onetool_code.hits import Hit
from onetool_code.project.definitions import Definition
from onetool_code.project.placement import Placement


def _write(root, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).write_text(text)


def _places(answer: dict) -> list[tuple[str, int, int]]:
    return [(r["file_path"], r["start_line"], r["end_line"]) for r in answer["results"]]


CACHE = '''\
class Cache:
    """Values by key, and how often they were read."""
    def __init__(self) -> None:
        self.data: dict[str, int] = {}
        self.hits = 0
    def size(self) -> int: return len(self.data)
    def get(self, key: str) -> int | None:
        self.hits += 1
        return self.data.get(key)
    def put(self, key: str, value: int) -> None:
        self.data[key] = value
'''


def test_one_answer_shows_no_line_twice_where_chunks_overlap_a_definition_shown_whole(tmp_path):
    """A block (2-9) over a one-line method's piece (6), and the class's second piece (7-11), shown whole: the
    method keeps its line, and the class's lines on either side of it were joined across it into one result
    that showed line 6 a second time."""
    _write(tmp_path, {"cache.py": CACHE})
    chunked_index(
        tmp_path,
        [
            ("cache.py", 2, 9, "block", "block_line_2"),
            ("cache.py", 6, 6, "method", "size_part1"),
            ("cache.py", 7, 11, "class", "Cache_part2"),
        ],
    )
    answer = onetool_code.search(query=".", path=str(tmp_path), mode="regex", format="json", content="never")
    spans = sorted((start, end) for _, start, end in _places(answer))
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans  # no line twice
    assert {n for a, b in spans for n in range(a, b + 1)} == set(range(1, 12))  # every line of every chunk


@st.composite
def placed_hits(draw) -> list[Placed]:
    """Hits of one file, each placed where it is, some shown as the whole definition they stand for."""
    hits = []
    for i in range(draw(st.integers(1, 7))):
        start = draw(st.integers(1, 80))
        end = start + draw(st.integers(0, 40))
        hit = Hit(i, "a.py", "python", "function", f"f{i}", "", start, end, 1.0, rank=i)
        whole = Definition("function", f"f{i}", start, end, ()) if draw(st.booleans()) else None
        hits.append(Placed(hit, Placement(start, end, True), whole))
    return hits


@settings(max_examples=400, deadline=None)
@given(hits=placed_hits())
def test_merged_groups_never_share_a_line_and_hold_every_hit(hits):
    groups = merge(hits)
    spans = sorted((min(p.start_line for p in g), max(p.end_line for p in g)) for g in groups)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans
    assert {p.hit.chunk_id for g in groups for p in g} == {h.hit.chunk_id for h in hits}
    assert {n for h in hits for n in range(h.start_line, h.end_line + 1)} <= {
        n for a, b in spans for n in range(a, b + 1)
    }
