"""The formatter over shaped results: merge, trim, content inclusion, the byte budget, and the three renderings.

Hits are shaped against files written into a temporary project (``on_disk``); a hit whose file is not there
is shown as indexed code with a note (``test_placement.py`` covers placing in detail).
"""

from __future__ import annotations

import itertools
import json

import pytest
from conftest import compact_rows, read_compact
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onetool_code
from onetool_code import request
from onetool_code.answer.formatting import INDENT, render_search
from onetool_code.answer.merging import Placed, merge
from onetool_code.answer.shaping import shape
from onetool_code.hits import Hit
from onetool_code.project.placement import LOST, Placement


def req(query="load config", **overrides):
    args = {
        "queries": query, "batch": False, "limit": None, "offset": None, "language": None, "chunk_type": None,
        "include": None, "exclude": None, "expand": None, "mode": None, "content": None, "format": None,
        "max_bytes": None,
    }  # fmt: skip
    args.update(overrides)
    return request.parse(**args)


def hit(path="a.py", start=1, lines=None, score=0.5, symbol="f", chunk_type="function", language="python", cid=0):
    lines = lines if lines is not None else [f"line {start + i}" for i in range(5)]
    return Hit(cid, path, language, chunk_type, symbol, "\n".join(lines), start, start + len(lines) - 1, score)


def on_disk(root, *hits, length=None):
    """Write each hit's file so that it holds the hit's lines at the hit's range (other lines: ``other N``)."""
    files = {}
    for h in hits:
        lines = files.setdefault(h.file_path, {})
        lines.update(zip(range(h.start_line, h.end_line + 1), h.code.split("\n"), strict=True))
    for path, lines in files.items():
        last = max(length or 0, max(lines))
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(f"{lines.get(n, f'other {n}')}\n" for n in range(1, last + 1)))
    return list(hits)


def render(hits, root, **overrides):
    r = req(**overrides)
    return render_search(shape(list(hits), r, root), r, None)


def json_items(hits, root, **overrides):
    """The results of a json answer (its envelope is tested on its own)."""
    answer = render(hits, root, format="json", **overrides)
    assert answer["count"] == len(answer["results"])
    return answer["results"]


# --- merge -----------------------------------------------------------------------------------------------


def placed(*hits):
    return [Placed(h, Placement(h.start_line, h.end_line, True)) for h in hits]


# --- merge -----------------------------------------------------------------------------------------------


def spans_of(groups):
    return [[(p.start_line, p.end_line) for p in g] for g in groups]


def test_nested_hits_merge_into_the_outer_range():
    groups = merge(placed(hit(start=10, lines=["x"] * 5, score=0.9), hit(start=1, lines=["y"] * 30, score=0.5)))
    assert spans_of(groups) == [[(10, 14), (1, 30)]]


def test_overlapping_adjacent_and_one_line_gap_merge_but_two_lines_do_not():
    hits = [hit(start=1, lines=["a"] * 10), hit(start=8, lines=["b"] * 5), hit(start=13, lines=["c"] * 2),
            hit(start=16, lines=["d"] * 2), hit(start=20, lines=["e"] * 2)]  # fmt: skip
    groups = merge(placed(*hits))
    assert [(min(p.start_line for p in g), max(p.end_line for p in g)) for g in groups] == [(1, 17), (20, 21)]


def test_other_files_never_merge_and_rank_order_is_kept():
    hits = [hit("b.py", 1, score=0.9), hit("a.py", 1, score=0.8), hit("b.py", 3, score=0.7)]
    groups = merge(placed(*hits))
    assert [[p.hit.file_path for p in g] for g in groups] == [["b.py", "b.py"], ["a.py"]]


def test_hits_the_file_could_not_place_merge_only_among_themselves():
    found, lost = hit(start=1, lines=["a"] * 10), hit(start=5, lines=["b"] * 3)
    groups = merge([Placed(found, Placement(1, 10, True)), Placed(lost, Placement(5, 7, False, "changed", LOST))])
    assert spans_of(groups) == [[(1, 10)], [(5, 7)]]


def test_merged_result_has_union_range_best_score_and_all_lines(tmp_path):
    outer = hit(start=1, lines=["class Store:", "    def get(self):", "        return 1", "", "    def put(self):",
                                "        pass"], score=0.4, symbol="Store", chunk_type="class")  # fmt: skip
    inner = hit(start=5, lines=["    def put(self):", "        pass"], score=0.8, symbol="put", chunk_type="method")
    answer = json_items(on_disk(tmp_path, inner, outer), tmp_path, query="put")
    assert len(answer) == 1
    item = answer[0]
    assert (item["start_line"], item["end_line"], item["score"], item["name"]) == (1, 6, 0.8, "Store")
    assert item["definitions"] == "method put, class Store, method get"  # the one the query is about first
    assert item["match_lines"] == [5]
    assert item["content"].splitlines()[0] == "class Store:"


def test_gap_line_comes_from_disk_when_the_file_matches(tmp_path):
    source = ["def a():", "    return 1", "# between", "def b():", "    return 2"]
    (tmp_path / "a.py").write_text("\n".join(source) + "\n")
    hits = [hit(start=1, lines=source[:2], score=0.9), hit(start=4, lines=source[3:], score=0.8)]
    item = json_items(hits, tmp_path)[0]
    assert (item["start_line"], item["end_line"]) == (1, 5)
    assert item["content"] == "\n".join(source)


def test_blank_edge_lines_are_trimmed_and_the_range_follows(tmp_path):
    blank_edged = on_disk(tmp_path, hit(start=10, lines=["", "  ", "def f():", "    pass", "", ""]))
    item = json_items(blank_edged, tmp_path)[0]
    assert (item["start_line"], item["end_line"], item["content"]) == (12, 13, "def f():\n    pass")


def test_file_result_count_only_when_shared(tmp_path):
    hits = on_disk(tmp_path, hit("a.py", 1), hit("b.py", 1), hit("a.py", 40))
    items = json_items(hits, tmp_path)
    # The results of one file come together, files in the order of their best result.
    assert [(i["file_path"], i.get("file_result_count")) for i in items] == [("a.py", 2), ("a.py", 2), ("b.py", None)]


# --- content inclusion -----------------------------------------------------------------------------------


def many(n, lines=5):
    return [hit(f"f{i}.py", 1, [f"l{j}" for j in range(lines)], score=1 - i / 100) for i in range(n)]


def test_one_result_gets_all_its_code(tmp_path):
    item = json_items(many(1, lines=400), tmp_path, max_bytes=100_000)[0]
    assert item["content_lines"] == 400 and not item["content_truncated"] and item["content"].count("\n") == 399


@pytest.mark.parametrize("count", [2, 3])
def test_two_or_three_results_get_150_lines_each(tmp_path, count):
    items = json_items(many(count, lines=200), tmp_path, max_bytes=100_000)
    assert all(i["content_truncated"] and i["content"].count("\n") == 149 and i["content_lines"] == 200 for i in items)


def test_four_results_get_no_code(tmp_path):
    assert not any("content" in i for i in json_items(many(4), tmp_path))


def test_content_always_and_never(tmp_path):
    assert all("content" in i for i in json_items(many(6), tmp_path, content="always"))
    assert not any("content" in i for i in json_items(many(1), tmp_path, content="never"))


def test_inclusion_counts_results_after_merging(tmp_path):
    # Five hits, but four of them merge into one: two results, so both get code.
    hits = [hit("a.py", 1, score=0.9), hit("a.py", 3), hit("a.py", 6), hit("a.py", 10), hit("b.py", 1)]
    items = json_items(hits, tmp_path)
    assert len(items) == 2 and all("content" in i for i in items)


def test_expand_reads_context_from_disk(tmp_path):
    source = [f"line {n}" for n in range(1, 41)]
    (tmp_path / "a.py").write_text("\n".join(source) + "\n")
    hits = [hit("a.py", 20, source[19:22]), hit("a.py", 2, source[1:3]), *many(3)]
    items = json_items(hits, tmp_path, expand=3)
    first = items[0]
    assert (first["start_line"], first["end_line"]) == (20, 22)
    assert first["content_start_line"] == 17 and first["content"] == "\n".join(source[16:25])
    second = items[1]
    assert second["content_start_line"] == 1 and second["content"].startswith("line 1\n")


def test_expand_notes_a_changed_or_missing_file(tmp_path):
    (tmp_path / "a.py").write_text("totally different\n" * 30)
    items = json_items([hit("a.py", 5), hit("gone.py", 1)], tmp_path, expand=2)
    assert items[0]["note"] == "changed since indexing, no longer in the file; showing the indexed code"
    assert items[1]["note"] == "deleted since indexing; showing the indexed code"
    assert items[0]["content"] == "\n".join(f"line {n}" for n in range(5, 10))


def test_expand_never_reads_outside_the_project(tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text("\n".join(f"secret {n}" for n in range(1, 20)))
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.py").symlink_to(outside)
    items = json_items([hit("link.py", 5, [f"secret {n}" for n in range(5, 8)])], root, expand=3)
    assert "outside the project root" in items[0]["note"] and "secret 2" not in items[0]["content"]


# --- budget --------------------------------------------------------------------------------------------


def test_budget_drops_code_of_lower_results_first(tmp_path):
    hits = [hit(f"f{i}.py", 1, [f"code line {j} " * 5 for j in range(60)], score=0.9 - i / 10) for i in range(3)]
    answer = render(hits, tmp_path, max_bytes=5000)
    assert len(answer.encode()) <= 5000
    assert answer.count("```python") == 1  # only the top result keeps its code
    assert answer.splitlines()[-1].startswith("Left out to stay within 5,000 bytes: the code of results 2-3.")


def test_budget_trims_the_top_results_code_before_dropping_it(tmp_path):
    big = on_disk(tmp_path, hit("big.py", 1, [f"x = {n} " * 10 for n in range(500)]))
    answer = render(big, tmp_path, max_bytes=3000)
    assert len(answer.encode()) <= 3000 and "```python" in answer
    assert "more lines: read big.py:" in answer
    assert "most of the code of result 1" in answer.splitlines()[-1]


def test_budget_then_drops_previews_then_results(tmp_path):
    hits = [hit(f"a/very/long/path/number/{i}/module_name.py", 1, ["x" * 150, "y" * 150], score=0.5) for i in range(60)]
    answer = render(hits, tmp_path, limit=100, max_bytes=2000)
    assert len(answer.encode()) <= 2000
    last = answer.splitlines()[-1]
    assert "the previews of results" in last and "results " in last and "max_bytes=4000" in last


def test_json_budget_counts_the_serialised_list(tmp_path):
    hits = [hit(f"f{i}.py", 1, ["z" * 100] * 3) for i in range(40)]
    answer = render(hits, tmp_path, format="json", max_bytes=3000, limit=100)
    assert len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()) <= 3000


# --- renderings ------------------------------------------------------------------------------------------


def test_text_layout(tmp_path):
    """One path line for a file with several results; ranges without the path under it; a one-line range as one
    number; runs of match lines as ranges; previews that do not repeat the line the result is named by;
    definitions only when they say more than the result line; past the first three results, a named one is its
    location and name only."""
    parse = [
        "def parse_config(text):",
        "    config = {}",
        "    config['a'] = 1",
        "    config['b'] = 2",
        "    return config",
    ]
    hits = on_disk(
        tmp_path,
        hit("src/config.py", 10, ["def load_config(path):", "    data = read(path)", "    return parse_config(data)"],
            0.8123, "load_config"),
        hit("src/cli.py", 3, ["from config import load_config"], 0.7, "import_config", "import"),
        hit("src/config.py", 30, parse, 0.6, "parse_config"),
    )  # fmt: skip
    hits.append(hit("gone.py", 7, ["class Loader:", "    def load(self): pass"], 0.5, "Loader", "class"))
    assert render(hits, tmp_path, query="load config").splitlines() == [
        "Found 4 results for: load config",
        "src/config.py",
        "1. :10-12 function load_config (0.81)",
        "  11: data = read(path)",
        "  12: return parse_config(data)",
        "  matches: 10",
        "2. :30-34 function parse_config (0.60)",
        "  31: config = {}",
        "  32: config['a'] = 1",
        "  matches: 30,33-34",
        "3. src/cli.py:3 import (0.70)",
        "  3: from config import load_config",
        "4. gone.py:7-8 class Loader (0.50)",
        "  defines: method load",
        "  note: deleted since indexing; showing the indexed code",
    ]
    (unnamed,) = on_disk(
        tmp_path, hit("src/notes.py", 1, ["# load the config once"], 0.55, "comment_line_1", "comment")
    )
    lines = render([*hits[:3], unnamed, hits[3]], tmp_path, query="load config").splitlines()
    assert lines[-5:] == [
        "4. src/notes.py:1 comment (0.55)",  # unnamed: its best line still says what it is
        "  1: # load the config once",
        "5. gone.py:7-8 class Loader (0.50)",
        "  defines: method load",
        "  note: deleted since indexing; showing the indexed code",
    ]


def test_the_first_three_results_get_two_preview_lines_the_others_one(tmp_path):
    code = ["def load(path):", "    return read(path)", "", "def config():", "    return load(config())"]
    hits = on_disk(tmp_path, *(hit(f"m{i}.py", 1, code, score=1 - i / 10) for i in range(5)))
    items = json_items(hits, tmp_path, query="load config")
    # Of the two definitions, ``config`` meets the query best (both words, its whole name): its lines are shown.
    assert [i["preview"] for i in items] == [
        *["def config():\n    return load(config())"] * 3,
        *["def config():"] * 2,  # the line that names it
    ]
    assert all(i["match_lines"] == [4, 5] for i in items)


def test_text_shows_the_third_results_best_line_and_lists_its_other_matching_line(tmp_path):
    """The best line is the one with the most of the query's words, not the first of the two in the file; json
    keeps the two-line preview of the first three."""
    code = ["settings = {}", "config = settings", "# padding", "load(config, settings)"]
    blocks = (hit(f"m{i}.py", 1, code, 1 - i / 10, "block_line_1", "block") for i in range(4))
    hits = on_disk(tmp_path, *blocks)
    assert render(hits, tmp_path, query="load config").splitlines()[1:] == [
        "1. m0.py:1-4 block (1.00)",
        "  2: config = settings",
        "  4: load(config, settings)",
        "2. m1.py:1-4 block (0.90)",
        "  2: config = settings",
        "  4: load(config, settings)",
        "3. m2.py:1-4 block (0.80)",
        "  4: load(config, settings)",
        "  matches: 2",
        "4. m3.py:1-4 block (0.70)",
        "  4: load(config, settings)",
    ]
    assert [i["preview"] for i in json_items(hits, tmp_path, query="load config")] == [
        *["config = settings\nload(config, settings)"] * 3,
        "load(config, settings)",
    ]


def test_indexed_code_of_a_gone_file_names_the_definition_the_query_is_about(tmp_path):
    """Without the file, the indexed code is parsed for the definitions inside; the one the query's words meet
    best comes first and its lines are the preview, unnumbered (a query naming the class itself names none)."""
    code = ["class Shelf:", "    def add(self, book):", "        self.books.append(book)", "",
            "    def lend(self, member):", "        # a member borrows the first book", "        return self.books.pop()"]  # fmt: skip
    shelf = hit("gone.py", 10, code, 0.5, "Shelf", "class")
    assert render([shelf], tmp_path, query="which member borrows a book", content="never").splitlines()[1:5] == [
        "1. gone.py:10-16 class Shelf (0.50)",
        "  defines: method lend, add",
        "  | def lend(self, member):",
        "  | # a member borrows the first book",
    ]
    assert render([shelf], tmp_path, query="Shelf", content="never").splitlines()[2] == "  defines: method add, lend"


def test_definitions_say_a_shared_label_once(tmp_path):
    code = ["class Store:", "    def get(self): pass", "    def put(self): pass", "def helper(): pass"]
    (item,) = on_disk(tmp_path, hit("s.py", 1, code, symbol="Store", chunk_type="class"))
    answer = render([item, *many(3)], tmp_path, query="zzz")
    assert "  defines: method get, put, function helper" in answer.splitlines()


def test_compact_is_the_text_answer_as_rows(tmp_path):
    """A JSON line: each file once, as text names it, then its results' rows: ``[start, end, what, score]``, how
    many lines of preview text shows, and a dict of the rest (``m`` other matching lines, ``c`` how many lines of
    code); then those lines, as they are, row by row."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\n\ndef load(): pass\n")
    answer = render(
        [hit("src/a.py", 3, ["def load(): pass"], 0.4567, "load")], tmp_path, format="compact", query="load"
    )
    assert answer == '{"count":1,"results":["src/a.py",[3,"function load",0.46,{"m":"3","c":1}]]}\ndef load(): pass'
    load = hit("b.py", 1, ["def load(path):", "    return open(path).read()"], 0.9, "load", cid=1)
    save = hit("b.py", 10, ["def save(path, text):", "    pass"], 0.8, "save", cid=2)
    hits = [*on_disk(tmp_path, load, save), *many(2)]
    answer = read_compact(render(hits, tmp_path, format="compact", query="load path", content="never"))
    text = render(hits, tmp_path, query="load path", content="never")
    assert answer["results"][0] == "b.py" and [row[:4] for row in answer["results"][1:3]] == [
        [1, 2, "function load", 0.9], [10, 11, "function save", 0.8],
    ]  # fmt: skip
    under_load = text.split("\n1. :1-2 function load (0.90)\n", 1)[1].split("\n2. ")[0].split("\n")
    assert under_load == [f"{INDENT}2: return open(path).read()", f"{INDENT}matches: 1"]  # what text says under it
    assert answer["results"][1][4:] == ["2: return open(path).read()", {"m": "1"}]


def test_chunk_text_that_lost_its_indentation_is_shown_as_on_disk(tmp_path):
    """ChunkHound's chunk text starts at the definition (no indentation, no ``export``) and drops blank lines
    between joined pieces; lines come from disk while the file still holds the chunk."""
    source = ["class Outer {", "  export class Inner {", "", "    run() {}", "  }", "}"]
    (tmp_path / "a.ts").write_text("\n".join(source) + "\n")
    chunk = Hit(1, "a.ts", "typescript", "class", "Inner", "class Inner {\n    run() {}\n  }", 2, 5, 0.5)
    item = json_items([chunk], tmp_path, query="run")[0]
    assert (item["start_line"], item["end_line"]) == (2, 5)
    assert item["content"] == "  export class Inner {\n\n    run() {}\n  }"
    assert item["match_lines"] == [4] and "note" not in item


def test_a_changed_file_falls_back_to_the_indexed_code_with_a_note(tmp_path):
    (tmp_path / "a.py").write_text("something else entirely\n" * 10)
    item = json_items([hit("a.py", 2, ["def f():", "    return 1"])], tmp_path)[0]
    assert item["content"] == "def f():\n    return 1"
    assert item["note"] == "changed since indexing, no longer in the file; showing the indexed code"


def test_no_results(tmp_path):
    assert render([], tmp_path, query="nothing here") == "No results found for: nothing here"
    assert render([], tmp_path, format="json", query="nothing") == {"query": "nothing", "count": 0, "results": []}
    assert render([], tmp_path, format="compact", query="nothing") == '{"count":0}'


# --- invariants over many inputs -----------------------------------------------------------------------

line_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=120)


PATHS = ["a.py", "b/c.ts", "déjà/vu.go", "x" * 80 + ".rs", "gone.py"]


@st.composite
def projects(draw):
    """Files on disk and hits cut from them (so hits are located in their files, as real ones are); hits of
    ``gone.py`` name a file that does not exist, the path of a file deleted since indexing."""
    # ChunkHound numbers lines from a file's first non-blank one (``source.py``): each file starts with one, so
    # that the lines a hit is cut from are its numbers both in the index and in the file.
    files = {path: ["head", *draw(st.lists(line_text, max_size=119))] for path in PATHS[:-1]}
    hits = []
    for i in range(draw(st.integers(0, 25))):
        path = draw(st.sampled_from(PATHS))
        source = files.get(path) or draw(st.lists(line_text, min_size=1, max_size=40))
        start = draw(st.integers(1, len(source)))
        end = draw(st.integers(start, min(len(source), start + 40)))
        if any(line.strip() for line in source[start - 1 : end]):  # ChunkHound stores no blank chunk
            hits.append(hit(path, start, source[start - 1 : end], score=draw(st.floats(0, 1)), cid=i))
    return files, hits


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    project=projects(),
    max_bytes=st.integers(500, 8000),
    fmt=st.sampled_from(["text", "json", "compact"]),
    content=st.sampled_from(["auto", "always", "never"]),
    query=st.text(min_size=1, max_size=300).filter(str.strip),
)
def test_invariants(tmp_path, project, max_bytes, fmt, content, query):
    files, hits = project
    for path, lines in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    answer = render(hits, tmp_path, format=fmt, content=content, max_bytes=max_bytes, query=query, limit=100)
    size = (
        len(answer.encode())
        if isinstance(answer, str)
        else len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())
    )
    assert size <= max_bytes
    items = json_items(hits, tmp_path, content="always", max_bytes=1_000_000, query=query, limit=100)
    whole = dict(max_bytes=1_000_000, query=query, limit=100)
    compact = render(hits, tmp_path, format="compact", content="always", **whole)
    assert len(compact.encode()) <= len(render(hits, tmp_path, content="always", **whole).encode())
    assert_reads_back(compact, render(hits, tmp_path, format="json", content="always", **whole))
    # Lines a result may span: its file's hits, and the one-line gaps that merging bridges.
    allowed: dict[str, set[int]] = {}
    for h in hits:
        allowed.setdefault(h.file_path, set()).update(range(h.start_line, h.end_line + 2))
    ranges = {}
    for item in items:
        first, last = item["start_line"], item["end_line"]
        assert first <= last
        assert set(range(first, last + 1)) <= allowed[item["file_path"]]
        if item["file_path"] in files:  # located in the file: the code shown is the file's own lines
            assert "note" not in item
            shown = (
                files[item["file_path"]][item["content_start_line"] - 1 :]
                if "content_start_line" in item
                else (files[item["file_path"]][first - 1 : last])
            )
            assert item["content"].split("\n") == shown[: len(item["content"].split("\n"))]
        else:
            assert item["note"].startswith("deleted since indexing")
        for number in item.get("match_lines", []):
            assert first <= number <= last
        assert item.get("match_lines", []) == sorted(item.get("match_lines", []))[:8]
        ranges.setdefault(item["file_path"], []).append((first, last))
    for spans in ranges.values():
        spans.sort()
        assert all(a[1] + 2 < b[0] for a, b in itertools.pairwise(spans)), spans  # neither overlap nor touch


def test_real_hits_from_the_sample_index(sample_index):
    """On real hits: ranges inside the files, match lines inside ranges, the default answer under 5,000 bytes."""
    for query in ["retry with exponential backoff", "parse configuration file", "UserSession", "LoanService"]:
        answer = onetool_code.search(
            query=query, path=str(sample_index.root), base_url=sample_index.base_url, format="json"
        )
        for item in answer["results"]:
            file_lines = (sample_index.root / item["file_path"]).read_text().splitlines()
            assert 1 <= item["start_line"] <= item["end_line"] <= len(file_lines)
            assert file_lines[item["start_line"] - 1].strip() and file_lines[item["end_line"] - 1].strip()
            assert all(item["start_line"] <= n <= item["end_line"] for n in item.get("match_lines", []))
        text = onetool_code.search(query=query, path=str(sample_index.root), base_url=sample_index.base_url)
        assert len(text.encode()) <= 5000


def test_a_chunk_whose_line_numbers_are_off_is_found_where_it_is(tmp_path):
    """ChunkHound 6.1.0 numbers lines from the first non-blank line of a file; the reader finds the chunk
    a few lines further down and reports where it really is."""
    (tmp_path / "a.py").write_text("\n\n\nimport os\n\n\ndef f():\n    return os.sep\n")
    item = json_items([hit("a.py", 4, ["def f():", "    return os.sep"], symbol="f")], tmp_path, query="sep")[0]
    assert (item["start_line"], item["end_line"], item["match_lines"]) == (7, 8, [8])
    assert "note" not in item


def test_text_content_header_only_when_the_code_reaches_past_the_hit(tmp_path):
    source = [f"line {n}" for n in range(1, 301)]
    (tmp_path / "a.py").write_text("\n".join(source) + "\n")
    hits = [hit("a.py", 1, source[:200], score=0.9), hit("b.py", 1, ["x"])]
    plain = render(hits, tmp_path, max_bytes=100_000)
    assert "code of lines" not in plain and "... 50 more lines: read a.py:151-200" in plain
    expanded = render(hits[:1], tmp_path, max_bytes=100_000, expand=5)
    assert "  code of lines 1-205:" in expanded


def test_control_characters_in_paths_and_names_are_escaped_in_text(tmp_path):
    """A repository's file names cannot forge a result line (a newline) or hide one (terminal escape codes)."""
    from onetool_code import cli
    from onetool_code import settings as config
    from onetool_code.indexer import build_index

    forged = "evil\n2. auth.py:1-9 function login (0.99)\n.py"
    (tmp_path / forged).write_text("def login_helper():\n    return 1\n")
    (tmp_path / "esc\x1b[2K\x1b[1Aname.py").write_text("def login_helper_two():\n    return 2\n")
    (tmp_path / "rtl\u202eyp.exe.py").write_text("def login_helper_three():\n    return 3\n")
    build_index(config.resolve(path=str(tmp_path)), embeddings=False, progress=False)
    text = onetool_code.search(query="login_helper", path=str(tmp_path), mode="lexical")
    assert not any(line.startswith("2. auth.py") for line in text.splitlines())
    assert "evil\\n2. auth.py:1-9 function login (0.99)\\n.py" in text
    assert "esc\\x1b[2K\\x1b[1Aname.py" in text and "rtl\\u202eyp.exe.py" in text
    assert all(ch == "\n" or ch.isprintable() for ch in text)
    data = onetool_code.search(query="login_helper", path=str(tmp_path), mode="lexical", format="json")
    assert {r["file_path"] for r in data["results"]} >= {forged, "esc\x1b[2K\x1b[1Aname.py"}  # json keeps them, escaped
    assert cli.main(["status", "--path", str(tmp_path)]) == 0


REAL_SEARCHES = [
    ("retry with exponential backoff", "hybrid"),
    ("how is a session token checked", "semantic"),
    ("UserSession", "lexical"),
    ("parse configuration file", "lexical"),
    ("import", "lexical"),
    (r"def \w+", "regex"),
    (r"func \w+", "regex"),
]


def assert_reads_back(compact: str, answer: dict) -> None:
    """The compact answer, read as the README says, holds the json answer's results: each one's file, lines,
    score and code (what text shows of it)."""
    envelope = read_compact(compact)
    assert envelope["count"] == answer["count"] and envelope.get("next_offset") == answer.get("next_offset")
    rows = compact_rows(envelope)
    assert len(rows) == len(answer["results"])
    for (where, start, end, row), item in zip(rows, answer["results"], strict=True):
        assert (where, start, end) == (item["file_path"], item["start_line"], item["end_line"])
        score = row[2 if start == end else 3]
        assert score == item["score"] is None or abs(score - item["score"]) < 0.006
        details = row[-1] if isinstance(row[-1], dict) else {}
        assert details.get("c") == item.get("content")


@pytest.mark.parametrize(("query", "mode"), REAL_SEARCHES)
@pytest.mark.parametrize("content", ["never", "auto", "always"])
@pytest.mark.parametrize("limit", [3, 30])
def test_compact_costs_no_more_than_text_for_the_same_answer(sample_index, query, mode, content, limit):
    """Compact is for callers that count bytes: for the same results (a budget that leaves nothing out), it is
    no bigger than text, code shown or not, and it reads back to those results."""
    search = dict(
        query=query, path=str(sample_index.root), base_url=sample_index.base_url, mode=mode, content=content,
        limit=limit, max_bytes=1_000_000,
    )  # fmt: skip
    text = onetool_code.search(**search)
    compact = onetool_code.search(**search, format="compact")
    assert read_compact(compact)["count"] == int(text.split()[1]) > 0  # the same results: "Found N results for"
    assert len(compact.encode()) <= len(text.encode())
    assert_reads_back(compact, onetool_code.search(**search, format="json"))


def test_a_method_result_does_not_list_itself_among_its_definitions(tmp_path):
    """``method HeaderRouter.Handler`` already says ``method Handler``: no ``defines:`` line repeats it."""
    code = ["func (hr HeaderRouter) Handler(next http.Handler) http.Handler {", "\treturn next", "}"]
    hits = on_disk(tmp_path, hit("route_headers.go", 5, code, 0.9, "HeaderRouter.Handler", "method", "go"))
    lines = render(hits, tmp_path, query="header router").splitlines()
    assert lines[1].startswith("1. route_headers.go:5-7 method HeaderRouter.Handler (")
    assert not any("defines:" in line for line in lines)
    assert json_items(hits, tmp_path, query="header router")[0]["definitions"] == "method Handler"  # json keeps it


def test_a_swift_protocol_named_by_its_keyword_does_not_list_itself(tmp_path):
    """ChunkHound names a Swift protocol's chunk ``protocol Request`` (typed ``function``)."""
    code = ["public protocol Request {", "    associatedtype Response", "    var path: String { get }", "}"]
    hits = on_disk(tmp_path, hit("Sources/Net/Request.swift", 3, code, 0.9, "protocol Request", "function", "swift"))
    lines = render(hits, tmp_path, query="request path").splitlines()
    assert lines[1].startswith("1. Sources/Net/Request.swift:3-6 function protocol Request (")
    assert not any("defines:" in line for line in lines)
    assert json_items(hits, tmp_path, query="request path")[0]["definitions"] == "protocol Request"


def test_past_the_first_results_fewer_definitions_are_listed(tmp_path):
    """The first three results list six definitions; the places after them one, and how many more there are."""
    code = ["class Store:", *(f"    def m{n}(self): pass" for n in range(1, 6))]
    hits = on_disk(tmp_path, *(hit(f"s{i}.py", 1, code, 1 - i / 10, "Store", "class") for i in range(5)))
    defines = [line for line in render(hits, tmp_path, query="store").splitlines() if "defines:" in line]
    assert defines == [
        *["  defines: method m1, m2, m3, m4, m5"] * 3,
        *["  defines: method m1 (+4 more)"] * 2,
    ]
