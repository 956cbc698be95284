"""The default hybrid ranking: fusion, each structural prior on small real indexes, regex mode, and the lexical
index's life (built once per state of the file, kept outside the project, rebuilt when the file changes)."""

from __future__ import annotations

import time
from pathlib import Path

import conftest
import pytest

import onetool_code
from onetool_code import derived, lexical, ranking
from onetool_code.derived import STORE
from onetool_code.hits import Hit
from onetool_code.schema import Filters


def make_project(root: Path, files: dict[str, str], base_url: str | None) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    conftest.build_index(root, base_url, embeddings=base_url is not None)
    return root


def top(root: Path, base_url: str | None, query: str, **options) -> list[tuple[str, str]]:
    answer = onetool_code.search(query=query, path=str(root), base_url=base_url, format="json", **options)
    assert "results" in answer, answer
    return [(r["file_path"], r["name"]) for r in answer["results"]]


SOURCE = '''def save_record(store, record):
    """Write one record to the store and flush it."""
    store.rows.append(record)
    store.flush()
    return len(store.rows)
'''
TESTS = """from store import save_record


def test_save_record_appends():
    assert save_record(FakeStore(), {"id": 1}) == 1


def test_save_record_flushes():
    store = FakeStore()
    save_record(store, {"id": 2})
    save_record(store, {"id": 3})
    assert store.flushed
"""


def test_source_comes_before_its_tests_unless_tests_are_asked_for(tmp_path, server):
    root = make_project(tmp_path, {"src/store.py": SOURCE, "tests/test_store.py": TESTS}, server.base_url)
    assert top(root, server.base_url, "save record")[0] == ("src/store.py", "save_record")
    assert top(root, server.base_url, "save record", mode="semantic")[0][0] == "tests/test_store.py"  # the gap
    assert top(root, server.base_url, "tests for save record")[0][0] == "tests/test_store.py"
    assert top(root, server.base_url, "save record", include="tests/")[0][0] == "tests/test_store.py"


def test_a_definition_comes_before_a_one_line_use(tmp_path, server):
    files = {
        "app/http_client.py": "class HttpClient:\n    def __init__(self, timeout):\n        self.timeout = timeout\n\n"
        "    def get(self, url):\n        return fetch(url, timeout=self.timeout)\n",
        "app/main.py": "client = HttpClient(timeout=5)\n",
        "app/other.py": "import os\n\nbackup = HttpClient(timeout=30)\n",
    }
    root = make_project(tmp_path, files, server.base_url)
    assert top(root, server.base_url, "HttpClient")[0] == ("app/http_client.py", "HttpClient")


def test_an_identifier_query_puts_the_definition_first(tmp_path, server):
    uses = {
        f"src/use{i}.ts": f"import {{ parseOptions }} from './options';\nconst o{i} = parseOptions(argv);\n"
        for i in range(6)
    }
    definition = (
        "export function parseOptions(argv: string[]): Options {\n  const options = defaults();\n  return options;\n}\n"
    )
    root = make_project(tmp_path, {**uses, "src/options.ts": definition}, server.base_url)
    assert top(root, server.base_url, "parseOptions")[0] == ("src/options.ts", "parseOptions")
    assert top(root, server.base_url, "where is parseOptions defined")[0] == ("src/options.ts", "parseOptions")


def test_docs_come_after_the_code_they_describe(tmp_path, server):
    files = {
        "README.md": "# Store\n\nCall save_record to save a record in the store; it flushes the store.\n",
        "docs/guide.md": "## Saving\n\nsave_record saves a record. The store is flushed after each record.\n",
        "src/store.py": SOURCE,
    }
    root = make_project(tmp_path, files, server.base_url)
    assert top(root, server.base_url, "save a record in the store")[0][0] == "src/store.py"
    assert top(root, server.base_url, "docs about saving a record")[0][0] in {"README.md", "docs/guide.md"}


def hit(path: str, start: int, chunk_id: int, chunk_type: str = "function") -> Hit:
    return Hit(chunk_id, path, "python", chunk_type, "f", "code\nmore\nlines", start, start + 2, 0.5)


def test_fusion_is_deterministic_and_ties_fall_back_to_path_then_line():
    a, b, c = hit("b.py", 1, 1), hit("a.py", 9, 2), hit("a.py", 3, 3)
    # a and b each rank first in one list; c is second in both and so scores higher than either.
    fused = ranking.hybrid([a, c], [b, c], "query", Filters())
    assert [h.chunk_id for h in fused] == [3, 2, 1]  # c; then the tie of a and b, by path
    assert fused[1].score == fused[2].score
    assert ranking.hybrid([a, c], [b, c], "query", Filters()) == fused
    assert [h.chunk_id for h in ranking.hybrid([c, a], [c, b], "query", Filters())] == [3, 2, 1]
    assert fused[0].score == pytest.approx(2 * (ranking.HYBRID_K + 1) / (ranking.HYBRID_K + 2) / 2)


@pytest.mark.parametrize(
    ("query", "names", "qualifiers"),
    [
        ("Segment.split_and_crop_lines", {"split_and_crop_lines"}, {"segment"}),
        ("Layer.prototype.match", {"match"}, {"layer"}),
        ("parseOptions", {"parseoptions"}, set()),
        ("retry", {"retry"}, set()),
        ("how does the Client pick a timeout", {"client"}, set()),
        ("Where are tokens validated", set(), set()),
        ("CSRF verification failed", set(), set()),  # an acronym is a word, not a name
        ("commands/migrate.py Command.handle", {"handle"}, {"commands", "migrate", "command"}),
        ("django.utils.html.escape", {"escape"}, {"django", "utils", "html"}),
        ("handle in core/management", set(), {"core", "management"}),
        ("the GET/POST parameters", {"get", "post"}, set()),  # capitalised words, not a path
    ],
)
def test_the_names_a_query_spells_out(query, names, qualifiers):
    assert ranking.names_in(query) == (names, qualifiers)


def test_a_capitalised_word_is_a_name_only_when_not_strict():
    assert ranking.names_in("how does the Client pick a timeout", strict=True) == (set(), set())
    assert ranking.names_in("TooManyFieldsSent: the GET parameters", strict=True) == ({"toomanyfieldssent"}, set())


@pytest.mark.parametrize(
    ("first_line", "defines"),
    [
        ("export function shallowCopy(base: any, strict: StrictMode) {", True),
        ("def shallow_copy(base):", False),
        ("  shallowCopy(base, strict) {", True),
        ("exports.shallowCopy = function (base) {", True),
        ("Layer.prototype.shallowCopy = function shallowCopy(path) {", True),
        ("  shallowCopy: function (base) {", True),
        ("const copy = shallowCopy(base)", False),
        ("  return shallowCopy(base, true)", False),
        ("class ShallowCopy {", True),
    ],
)
def test_a_definition_is_recognised_by_its_first_line_when_the_symbol_is_synthetic(first_line, defines):
    chunk = Hit(1, "src/a.ts", "typescript", "function", "definition_line_7", first_line + "\n  body\n}", 7, 9, 0.5)
    wants = ranking._Wants.of("shallowCopy", Filters())
    assert (ranking.prior(chunk, wants) == ranking.NAMED) is defines


def test_regex_mode(sample_index):
    answer = onetool_code.search(query=r"def \w+_config", path=str(sample_index.root), mode="regex", format="json")
    assert [r["name"] for r in answer["results"]] == ["parse_config_file", "load_config"]
    bad = onetool_code.search(query="def (?=x)", path=str(sample_index.root), mode="regex")
    assert bad.startswith("Error: query is not a valid regular expression (RE2 syntax")
    started = time.perf_counter()  # RE2 is linear: the classic catastrophic pattern is no threat
    onetool_code.search(query="(a+)+$" + "|x" * 200, path=str(sample_index.root), mode="regex")
    assert time.perf_counter() - started < 10


def test_regex_pages_follow_path_and_line_order(sample_index):
    first = conftest.ranked(sample_index.root, None, "def ", mode="regex", limit=3)
    second = conftest.ranked(sample_index.root, None, "def ", mode="regex", limit=3, offset=3)
    keys = [(h.file_path, h.start_line, h.chunk_id) for h in first.hits + second.hits]
    assert keys == sorted(keys) and first.next_offset == 3 and len(set(keys)) == 6


def test_the_lexical_index_is_kept_outside_the_project_and_reloaded(project, monkeypatch, capfd):
    found = top(project.root, None, "load_config", mode="lexical")
    assert found[0] == ("src/bookshelf/config.py", "load_config")
    folders = list((derived.cache_root() / "snapshot").iterdir())
    assert len(folders) == 1 and (folders[0] / "lexical").is_dir()
    assert not list((project.root / ".chunkhound").glob("**/*.npy"))
    STORE.clear()  # a new process: the built index must come from the cache directory, not be rebuilt
    monkeypatch.setattr(lexical, "build", lambda chunks: pytest.fail("rebuilt although a saved index exists"))
    assert top(project.root, None, "load_config", mode="lexical") == found
    assert capfd.readouterr().out == ""  # nothing may reach stdout: inside OneTool it is the MCP channel


def test_the_lexical_index_follows_the_file(tmp_path):
    root = make_project(tmp_path, {"src/store.py": SOURCE}, None)
    assert top(root, None, "freshly_added", mode="lexical") == []
    (root / "src" / "fresh.py").write_text("def freshly_added():\n    return 42\n")
    conftest.build_index(root, None, embeddings=False)
    assert top(root, None, "freshly_added", mode="lexical")[0] == ("src/fresh.py", "freshly_added")
    folders = list((derived.cache_root() / "snapshot").iterdir())
    assert len(folders) == 1  # the earlier state's folder is gone


def test_searches_work_when_the_cache_directory_cannot_be_written(project, monkeypatch, tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(blocked))
    assert top(project.root, None, "load_config", mode="lexical")[0][1] == "load_config"  # made, just not saved
    assert top(project.root, project.base_url, "load_config")[0][1] == "load_config"
    assert "Snapshot: of the index as it is" in onetool_code.status(path=str(project.root))
    assert blocked.read_text() == "a file where the cache directory would go"


def test_tokens_keep_the_whole_identifier_and_its_parts():
    assert lexical.tokens("parseHTTPResponse(load_config)") == [
        "parsehttpresponse", "parse", "http", "response", "load_config", "load", "config",
    ]  # fmt: skip
    assert lexical.query_tokens("a Segment.split_and_crop_lines x2") == [
        "segment", "split_and_crop_lines", "split", "and", "crop", "lines", "x2",
    ]  # fmt: skip


def test_batch_ranks_each_query_hybrid_then_fuses(sample_index):
    answer = onetool_code.search_batch(
        queries="load_config|RateLimiter", path=str(sample_index.root), base_url=sample_index.base_url, format="json"
    )
    shown = [(r["definitions"], r["queries"]) for r in answer["results"]]
    assert any("load_config" in d and 1 in q for d, q in shown), shown
    assert any("RateLimiter" in d and 2 in q for d, q in shown), shown
