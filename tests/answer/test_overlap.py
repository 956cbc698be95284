"""A line is shown once per answer, and once over the pages of a query: a hit whose lines a better-ranked hit of
its file already showed (on this page or an earlier one) is not shown again, and hits whose chunks overlap (as
ChunkHound's own chunks may) are one result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index.test_snapshot_answers import write_index

import onetool_code


def pages(root: Path, query: str, mode: str, count: int, **options) -> list[list[tuple[str, int, int, int]]]:
    """The first ``count`` pages of 10, each followed from the last's ``next_offset``: each result as (file,
    start, end, offset of its page)."""
    out, offset = [], 0
    for _ in range(count):
        answer = onetool_code.search(query=query, path=str(root), mode=mode, limit=10, offset=offset,
                                     format="json", content="never", **options)  # fmt: skip
        out.append([(r["file_path"], r["start_line"], r["end_line"], offset) for r in answer["results"]])
        if "next_offset" not in answer:
            break
        offset = answer["next_offset"]
    return out


def covered_again(answers: list[list[tuple[str, int, int, int]]]) -> list[tuple]:
    seen: list[tuple[str, int, int, int]] = []
    again = []
    for page in answers:
        for path, start, end, offset in page:
            again += [((path, start, end, offset), s) for s in seen if s[0] == path and s[1] <= start and end <= s[2]]
        seen += page
    return again


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_no_page_shows_lines_an_earlier_page_showed(sample_index, mode):
    # Lexically, auth.py's SessionStore is two chunks (84-101, 102-120) on pages 1 and 2, each shown whole: 84-120.
    answers = pages(sample_index.root, "user session token", mode, 5, base_url=sample_index.base_url)
    assert len(answers) >= 3 and covered_again(answers) == []


@pytest.mark.parametrize("mode", ["lexical", "semantic"])
def test_following_pages_loses_no_hit(sample_index, mode):
    """Every line of the hits ranked above the last page followed is on a page (or in the gap of a line that
    merging closes): the hits passed over were shown before."""
    answers = pages(sample_index.root, "user session token", mode, 4, base_url=sample_index.base_url)
    shown = [r for page in answers for r in page]
    end = answers[-1][0][3]  # the last page's offset: every hit above it was on a page or passed over
    whole = onetool_code.search(query="user session token", path=str(sample_index.root), mode=mode,
                                limit=end, format="json", content="never", base_url=sample_index.base_url)  # fmt: skip
    assert whole["count"] > 10
    for r in whole["results"]:
        lines = set(range(r["start_line"], r["end_line"] + 1))
        for path, start, end_line, _ in shown:
            if path == r["file_path"]:
                lines -= set(range(start - 1, end_line + 2))
        assert not lines, r


LINES = 320


def test_chunks_that_overlap_in_the_index_are_one_result(tmp_path):
    """click's ``_compat.py`` as ChunkHound 6.1.0 indexed it: ``section`` 255-301 and ``indentation`` 270-301."""
    root = tmp_path / "project"
    root.mkdir()
    text = [f"value_{n} = {n}" for n in range(1, LINES + 1)]
    text[254] = "# section: terminal width and indentation helpers"
    text[269] = "# indentation of the terminal width"
    (root / "_compat.py").write_text("\n".join(text) + "\n")
    code = lambda a, b: "\n".join(text[a - 1 : b])  # noqa: E731
    spans = [(1, "section", 255, 301), (2, "indentation", 270, 301), (3, "head", 1, 20)]
    write_index(
        root / ".chunkhound" / "db" / "chunks.db",
        [(1, "_compat.py", "python")],
        {
            "id": np.array([s[0] for s in spans], dtype=np.int32),
            "file_id": np.ones(len(spans), dtype=np.int32),
            "chunk_type": np.array(["block"] * len(spans), dtype=object),
            "symbol": np.array([s[1] for s in spans], dtype=object),
            "code": np.array([code(s[2], s[3]) for s in spans], dtype=object),
            "start_line": np.array([s[2] for s in spans], dtype=np.int32),
            "end_line": np.array([s[3] for s in spans], dtype=np.int32),
        },
        [],
    )
    answer = onetool_code.search(query="terminal width indentation", path=str(root), mode="lexical", format="json")
    places = [(r["start_line"], r["end_line"]) for r in answer["results"]]
    assert places == [(255, 301)], answer
