"""The default hybrid ranking: fusion, each structural prior on small real indexes, regex mode, and the lexical
index's life (built once per state of the file, kept outside the project, rebuilt when the file changes)."""

from __future__ import annotations

import json
import os
import select
import signal
import time
from dataclasses import replace
from pathlib import Path

import conftest
import pytest

import onetool_code
from onetool_code import names, settings
from onetool_code.hits import Hit
from onetool_code.index import lexical
from onetool_code.index.store import STORE
from onetool_code.schema import Filters
from onetool_code.search import lookup, phrases, ranking
from onetool_code.search.wants import Wants


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


def test_fusion_is_deterministic_and_ties_fall_back_to_path_then_line(monkeypatch):
    # The two lists weighed alike, as when the vectors' files are all the words' (``ranking._agreement``).
    monkeypatch.setattr(ranking, "VECTORS_KEPT", 1.0)
    a, b, c = hit("b.py", 1, 1), hit("a.py", 9, 2), hit("c.py", 3, 3)
    # a and b each rank first in one list; c is second in both and so scores higher than either.
    fused = ranking.hybrid([a, c], [b, c], "a search query", Filters())
    assert [h.chunk_id for h in fused] == [3, 2, 1]  # c; then the tie of a and b, by path
    assert fused[1].score == fused[2].score
    assert ranking.hybrid([a, c], [b, c], "a search query", Filters()) == fused
    assert [h.chunk_id for h in ranking.hybrid([c, a], [c, b], "a search query", Filters())] == [3, 2, 1]
    # Each file's one hit also gains the file's coherence (its share of all scores, the most for c).
    fused_c = 2 * (ranking.HYBRID_K + 1) / (ranking.HYBRID_K + 2) / 2
    assert fused[0].score == pytest.approx(fused_c * (1 + ranking.COHERENT_FILE))


def test_a_hit_overlapping_a_better_one_of_its_file_counts_only_for_its_own_lines():
    """An Elixir module's parts of about 50 lines cut across its functions: the part that overlaps a function
    found first is mostly that place again, and its file has fewer matching places than one whose hits are apart."""

    def span(chunk_id: int, path: str, start: int, end: int) -> Hit:
        return Hit(chunk_id, path, "elixir", "function", "f", "code\nmore\nlines", start, end, 0.5)

    def fused(second_of_a: Hit) -> list[Hit]:
        words = [span(1, "a.ex", 1, 10), span(2, "b.ex", 1, 10), second_of_a, span(4, "b.ex", 20, 29)]
        return ranking.hybrid([], words, "a search query", Filters())

    assert fused(span(3, "a.ex", 2, 11))[0].file_path == "b.ex"  # 1 line of 10 its own
    assert fused(span(3, "a.ex", 12, 21))[0].file_path == "a.ex"  # all 10
    assert fused(span(3, "a.ex", 3, 8))[0].file_path == "b.ex"  # inside the first: none
    # Around the first: its other 10 lines of 20 are its own, half its score.
    # The four score alike by their words: each keeps ``LEXICAL_LEAD`` of the first's value beside its rank's.
    lead = ranking.LEXICAL_LEAD
    rank = [(1 - lead) * (ranking.HYBRID_K + 1) / (ranking.HYBRID_K + r) + lead for r in (1, 2, 3, 4)]
    a_ex = next(h for h in fused(span(3, "a.ex", 1, 20)) if h.chunk_id == 1)
    evidence = ranking.COHERENT_FILE * (rank[0] + rank[2] / 2) / (rank[1] + rank[3])
    assert a_ex.score == pytest.approx(rank[0] * (1 + evidence))


@pytest.mark.parametrize(
    ("query", "spelled", "qualifiers"),
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
        ("Router::route", {"route"}, {"router"}),  # Rust's and C++'s paths qualify as a dot does
        ("serde::de::Deserialize", {"deserialize"}, {"serde", "de"}),
        ("writing to std::ostream", {"ostream"}, {"std"}),
    ],
)
def test_the_names_a_query_spells_out(query, spelled, qualifiers):
    assert names.names_in(query) == (spelled, qualifiers)


def test_a_capitalised_word_is_a_name_only_when_not_strict():
    assert names.names_in("how does the Client pick a timeout", strict=True) == (set(), set())
    assert names.names_in("TooManyFieldsSent: the GET parameters", strict=True) == ({"toomanyfieldssent"}, set())


def test_two_words_of_a_sentence_run_together_are_a_name_code_may_give():
    assert names.run_together("JSON object with named fields") == {
        "jsonobject",
        "json_object",
        "namedfields",
        "named_fields",
    }
    assert names.run_together("how the usage template is formatted") == {"usagetemplate", "usage_template"}
    assert names.run_together("retry") == frozenset()
    # a name, a dotted name or a path the query writes breaks the sentence: it is looked up as written
    assert names.run_together("Model.save") == frozenset()
    assert names.run_together("cache get_or_set default timeout") == {"defaulttimeout", "default_timeout"}
    assert names.run_together("route grouping with sub-routers") == {
        "routegrouping",
        "route_grouping",
        "subrouters",
        "sub_routers",
    }


# A class named by two words of the question, in a file named for something else, beside a file that says the
# question's words more often.
ELEMENTS = {
    "elements.ts": "/** A list of elements. */\n"
    "export class JsonArray {\n  items: JsonElement[] = [];\n}\n\n"
    "/** A map of members: each a property and its element. */\n"
    "export class JsonObject {\n  members = new Map<string, JsonElement>();\n\n"
    "  add(property: string, value: JsonElement): void {\n    this.members.set(property, value);\n  }\n}\n",
    "naming.ts": "/** How the fields of an object are named in JSON: a policy maps each field's name to its JSON name. */\n"
    "export function translateName(field: Field, policy: NamingPolicy): string {\n"
    "  // the JSON object's named fields, as the policy names them\n"
    "  return policy === 'upper' ? upperFirst(field.name) : field.name;\n}\n",
}
# ... and a local variable so named, in a function about something else.
CONVERT = {
    "checks.ts": "/** The validations of a string schema: each check a string must pass. */\n"
    "export function stringChecks(schema: Schema<string>): Check[] {\n"
    "  return schema.checks.filter((check) => check.kind === 'string');\n}\n",
    "convert.ts": "/** A JSON node's type, converted. */\n"
    "export function fromJsonString(node: JsonNode): Schema<string> {\n"
    "  let stringSchema = string();\n"
    "  if (node.format === 'email') stringSchema = stringSchema.check(email());\n"
    "  return stringSchema;\n}\n",
}


def test_a_definition_two_words_of_the_question_name_comes_first(tmp_path, monkeypatch):
    """The question "JSON object with named fields" asks for ``class JsonObject``, though another file says its
    words more often."""
    root = make_project(tmp_path / "elements", ELEMENTS, None)
    query = "JSON object with named fields"
    assert top(root, None, query)[0] == ("elements.ts", "JsonObject")
    monkeypatch.setattr(lookup, "run_together", lambda query: frozenset())
    assert top(root, None, query)[0] == ("naming.ts", "translateName")


def test_a_local_variable_two_words_of_the_question_name_is_no_definition(tmp_path, monkeypatch):
    """``let stringSchema`` inside a converter is a sentence's words met by chance, not the place asked for."""
    root = make_project(tmp_path / "convert", CONVERT, None)
    query = "string schema validations"
    assert top(root, None, query)[0] == ("checks.ts", "stringChecks")
    monkeypatch.setattr(lookup, "_declared", lambda hit: True)  # every definition counted, a variable's too
    assert top(root, None, query)[0] == ("convert.ts", "fromJsonString")


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
    wants = Wants.of("shallowCopy", Filters())
    # Named: boosted, the less when the chunk writes the name in another case (``ShallowCopy``).
    expected = ranking.NAMED * (ranking.OTHER_CASE if "ShallowCopy" in first_line else 1.0)
    assert ranking.prior(chunk, wants) == (expected if defines else 1.0)


@pytest.mark.parametrize(
    ("symbol", "language"),
    [
        ("file_structure", "python"),
        ("elixir_source_part1_part2", "elixir"),
        ("bash_script", "bash"),
        ("lua_chunk", "lua"),
    ],
)
def test_a_files_top_level_defines_nothing_whatever_its_language_calls_it(symbol, language):
    """ChunkHound names the chunk of a file's top level by language. An Elixir one holds the module's header and
    its first functions, and is ranked as the variables and imports are, below the definitions it holds."""
    code = (
        "# Loads dependencies.\ndefmodule Mix.Dep.Loader do\n  @moduledoc false\n\n  def children do\n    []\n  end\n"
    )
    top_level = Hit(1, "lib/mix/dep/loader.ex", language, "namespace", symbol, code, 1, 7, 0.5)
    wants = Wants.of("load dependencies", Filters())
    assert ranking.prior(top_level, wants) == ranking.NOT_DEFINING
    assert ranking.prior(replace(top_level, symbol="Mix.Dep.Loader"), wants) == 1.0


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
    folders = list((settings.cache_root() / "snapshot").iterdir())
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
    folders = list((settings.cache_root() / "snapshot").iterdir())
    assert len(folders) == 1  # the earlier state's folder is gone


def test_searches_work_when_the_cache_directory_cannot_be_written(project, monkeypatch, tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory would go")
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(blocked))
    assert top(project.root, None, "load_config", mode="lexical")[0][1] == "load_config"  # made, just not saved
    assert top(project.root, project.base_url, "load_config")[0][1] == "load_config"
    assert "Snapshot: of the index as it is" in onetool_code.status(path=str(project.root))
    assert blocked.read_text() == "a file where the cache directory would go"


def test_tokens_keep_the_whole_identifier_and_its_parts_each_by_its_stem():
    assert names.tokens("parseHTTPResponse(load_config)") == [
        "parsehttprespons", "pars", "http", "respons", "load_config", "load", "config",
    ]  # fmt: skip
    assert names.query_tokens("a Segment.split_and_crop_lines x2") == [
        "segment", "split_and_crop_lin", "split", "and", "crop", "line", "x2",
    ]  # fmt: skip
    # "validators" finds ValidateStruct, "rendering" render, "dependencies" dependency: one stem each.
    assert set(names.query_tokens("validators rendering dependencies")) <= set(
        names.tokens("ValidateStruct render dependency")
    )


def test_batch_ranks_each_query_hybrid_then_fuses(sample_index):
    answer = onetool_code.search_batch(
        queries="load_config|RateLimiter", path=str(sample_index.root), base_url=sample_index.base_url, format="json"
    )
    shown = [(r["definitions"], r["queries"]) for r in answer["results"]]
    assert any("load_config" in d and 1 in q for d, q in shown), shown
    assert any("RateLimiter" in d and 2 in q for d, q in shown), shown


# -- Code we never tuned for (issue 25): each signal on a small index of its own, words only -------------------


def words_only(tmp_path: Path, files: dict[str, str]) -> Path:
    """A project indexed without vectors: hybrid answers by words, as on the public benchmark."""
    return make_project(tmp_path, files, None)


def files_of(root: Path, query: str, **options) -> list[str]:
    return list(dict.fromkeys(path for path, _ in top(root, None, query, **options)))


IMPLS = "\n\n".join(
    f"impl Serialize for Type{n} {{\n    fn serialize<S>(&self, s: S) -> Result<S::Ok, S::Error> {{\n"
    f"        s.serialize_u{n}(self.0)\n    }}\n}}"
    for n in range(12)
)


def test_a_name_written_in_code_case_finds_its_declaration_before_the_methods_of_that_name(tmp_path):
    """``Serialize`` the trait, not one of a dozen ``fn serialize``; ``serialize`` written so, the method."""
    trait = "pub trait Serialize {\n    /// Serialize this value.\n    fn serialize<S>(&self, s: S) -> Result<S::Ok, S::Error>;\n}\n"
    root = words_only(tmp_path, {"src/ser/mod.rs": trait, "src/ser/impls.rs": IMPLS})
    assert top(root, None, "Serialize")[0] == ("src/ser/mod.rs", "Serialize")
    assert top(root, None, "serialize")[0][0] == "src/ser/impls.rs"


def test_a_sigil_does_not_hide_a_definition(tmp_path):
    files = {
        "core/checks.ts": "export interface $ZodCheck<T = never> {\n  _zod: $ZodCheckInternals<T>;\n}\n\n"
        "export const $ZodCheck = $constructor('$ZodCheck', (inst, def) => {\n  inst._zod.def = def;\n});\n",
        **{
            f"classic/use{i}.ts": "import { $ZodCheck } from '../core/checks';\n"
            + "".join(f"const check{i}_{n} = new $ZodCheck(def{n}); // ZodCheck {n}\n" for n in range(4))
            for i in range(5)
        },
    }
    root = words_only(tmp_path, files)
    assert files_of(root, "ZodCheck")[0] == "core/checks.ts"
    assert files_of(root, "ZodCheck and check execution pipeline")[0] == "core/checks.ts"
    # The named definitions behind it: the interface and the constant, found by their defining lines.
    from onetool_code import settings
    from onetool_code.index import live
    from onetool_code.index import readers as retrievers
    from onetool_code.project.source import SourceFiles
    from onetool_code.search import lookup

    resolved = settings.resolve(path=str(root))
    reader = retrievers.FromSnapshot(live.view(resolved.project_root, resolved.db_path).snapshot)
    found = lookup.find(reader, SourceFiles(resolved.project_root), "ZodCheck", Filters(), 10).hits
    assert {(h.file_path, h.defines) for h in found} == {("core/checks.ts", "zodcheck")}


def test_the_files_name_and_folder_count(tmp_path):
    """The words of ``binding/default_validator.go`` answer "validators ... binding" before a file that only uses
    the words (stems make "validators" meet ``ValidateStruct``)."""
    files = {
        "binding/default_validator.go": "package binding\n\ntype defaultValidator struct{}\n\n"
        "func (v *defaultValidator) ValidateStruct(obj any) error {\n\treturn v.validate(obj)\n}\n",
        "context.go": "package gin\n\n// Bind: the validators check the struct binding of the request; validators,\n"
        "// binding, struct binding, plugged validators.\nfunc (c *Context) Bind(obj any) error {\n"
        "\treturn c.MustBindWith(obj, binding.Default(c.Request))\n}\n",
    }
    root = words_only(tmp_path, files)
    assert files_of(root, "how validators are plugged in for struct binding")[0] == "binding/default_validator.go"


@pytest.mark.parametrize(
    "tests_path",
    [
        "core/src/commonTest/kotlin/io/shop/JobsTest.kt",  # a Kotlin Multiplatform source set of tests
        "core/src/jvmTest/kotlin/io/shop/Jobs.kt",
        "core/src/main/kotlin/io/shop/CancelJobTest.kt",  # a class of tests where no folder says so
        "src/Shop.Tests/JobsTests.cs",  # a .NET test project
    ],
)
def test_tests_named_the_jvm_and_dotnet_way_come_after_the_code(tmp_path, tests_path):
    files = {
        "core/src/commonMain/kotlin/io/shop/Cancellation.kt": "package io.shop\n\n"
        "/** Cancels a running job and its children. */\nfun cancelJob(job: Job) {\n    job.cancel()\n}\n",
        tests_path: "\n".join(
            f"// cancel a job and its children, case {n}\nfun cancelsJobAndChildren{n}() = cancelJob(job({n}))"
            for n in range(8)
        ),
    }
    root = words_only(tmp_path, files)
    assert files_of(root, "how a job and its children are cancelled")[0].endswith("Cancellation.kt")
    assert files_of(root, "tests for cancelling a job and its children")[0] == tests_path


def test_documentation_and_configuration_come_after_code_unless_asked_for(tmp_path):
    words = "middleware applied globally and to route groups"
    files = {
        "docs/doc.md": f"# Middleware\n\n{words}. " * 8 + "\n",
        ".goreleaser.yaml": "".join(f"middleware_{i}: {words}\n" for i in range(8)),
        "routergroup.go": "package gin\n\n// Use adds middleware to the group.\n"
        "func (group *RouterGroup) Use(middleware ...HandlerFunc) IRoutes {\n"
        "\tgroup.Handlers = append(group.Handlers, middleware...)\n\treturn group.returnObj()\n}\n",
    }
    root = words_only(tmp_path, files)
    assert files_of(root, "how middleware is applied to route groups")[0] == "routergroup.go"
    assert files_of(root, "middleware docs")[0] == "docs/doc.md"
    assert files_of(root, "goreleaser yaml configuration for middleware")[0] == ".goreleaser.yaml"


def test_one_files_many_hits_leave_room_for_other_files(tmp_path):
    big = "\n\n".join(f"def render_json_{n}(value):\n    return json_render(value, {n})\n" for n in range(30))
    others = {
        f"render/other{i}.py": f"def render_json_other_{i}(value):\n    return json_render(value)\n" for i in range(6)
    }
    root = words_only(tmp_path, {"render/json.py": big, **others})
    assert len(files_of(root, "render json")) >= 6  # not ten results of one file


def test_a_name_inside_a_sentence_counts_less_than_the_file_it_names(tmp_path):
    """ "toString builder for ..." is about ``ToStringBuilder``, not the ``toString`` method of every class: all
    of them define it (as commons-lang's do), and the sentence's other words pick the builder
    (``test_fusion_weights`` weighs each part)."""
    classes = {
        f"lang/{name}.java": f"public class {name} {{\n  private final int value;\n\n"
        f"  public {name}(int value) {{\n    this.value = value;\n  }}\n\n"
        f"  @Override\n  public String toString() {{\n"
        f'    return "{name}";\n  }}\n}}\n'
        for name in ("ArrayUtils", "StringUtils", "CharRange", "Fraction", "Range", "Pair")
    }
    builder = (
        "public class ToStringBuilder {\n  public ToStringBuilder append(String field, Object value) {\n"
        "    buffer.append(field).append('=').append(value);\n    return this;\n  }\n\n"
        "  @Override\n  public String toString() {\n    return buffer.toString();\n  }\n}\n"
    )
    root = words_only(tmp_path, {**classes, "lang/builder/ToStringBuilder.java": builder})
    assert files_of(root, "toString builder for human-readable object descriptions")[0] == (
        "lang/builder/ToStringBuilder.java"
    )
    assert [name for _, name in top(root, None, "toString")[:7]] == ["toString"] * 7  # the name alone: its definitions


def test_a_named_definition_survives_its_files_many_hits(tmp_path):
    """``type Engine`` sits below a dozen methods of ``Engine`` in one file, each saying the name more often than
    the declaration does: the cap on one file's hits must not drop the very definition the query names."""
    methods = "\n\n".join(
        f"func (engine *Engine) Handle{n}(e *Engine) *Engine {{\n\tengine.trees = e.trees // Engine {n}\n"
        f"\treturn engine\n}}"
        for n in range(14)
    )
    engine = f"package gin\n\n{methods}\n\ntype Engine struct {{\n\ttrees methodTrees\n}}\n"
    users = {
        f"use{i}.go": f"package gin\n\n// Engine, Engine: the Engine behind it.\nfunc Use{i}(e *Engine) *Engine {{\n"
        f"\treturn e\n}}\n"
        for i in range(4)
    }
    # A method of that name in a small file: a definition too, but not the declaration of the type.
    validator = "package binding\n\n// Engine returns the underlying validator Engine.\n"
    validator += "func (v *defaultValidator) Engine() any {\n\treturn v.validate // Engine\n}\n"
    root = words_only(tmp_path, {"gin.go": engine, "binding/validator.go": validator, **users})
    assert top(root, None, "Engine")[0] == ("gin.go", "Engine")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_process_forked_after_a_search_searches_as_its_parent(tmp_path, server):
    """A host that forks after searching (a pre-forking server) gives the child none of the kept threads a hybrid
    search ranks its semantic list on: the child's search must still answer, and alike."""
    root = make_project(tmp_path, {"src/store.py": SOURCE, "tests/test_store.py": TESTS}, server.base_url)
    expected = top(root, server.base_url, "save record")  # the parent's pool now holds an idle thread
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, then leave without running pytest's exit
        try:
            os.write(write, json.dumps(top(root, server.base_url, "save record")).encode())
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 60)
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    answer = os.read(read, 1 << 20) if ready else b""
    os.close(read)
    assert answer, "the forked child's search never answered"
    assert [tuple(hit) for hit in json.loads(answer)] == expected


SETTINGS = {
    "conf/__init__.py": "class LazySettings:\n"
    "    def _setup(self, name=None):\n"
    "        module = os.environ.get(ENVIRONMENT_VARIABLE)\n"
    "        if not module:\n"
    "            raise ImproperlyConfigured(\n"
    '                "Requested %s, but settings are not configured. "\n'
    '                "You must either define the environment variable %s "\n'
    '                "or call settings.configure() before accessing settings." % (name, ENVIRONMENT_VARIABLE)\n'
    "            )\n"
    "        self._wrapped = Settings(module)\n",
    "conf/loader.py": "\n\n".join(
        f"def load_settings_{n}(environment, variable):\n"
        f'    """Settings from the environment variable: the module defines the settings, configured once."""\n'
        f"    settings = read_settings_module(environment[variable])\n"
        f"    return configure_settings(settings, {n})\n"
        for n in range(4)
    ),
}


def test_a_pasted_error_message_finds_the_code_that_raises_it(tmp_path, monkeypatch):
    """Five words in the query's order, across a string the code wraps and a placeholder, are the raising line;
    the words alone are said more often by a loader that never raises it."""
    root = words_only(tmp_path, SETTINGS)
    message = (
        "Requested setting DEBUG, but settings are not configured. "
        "You must either define the environment variable DJANGO_SETTINGS_MODULE"
    )
    assert files_of(root, message)[0] == "conf/__init__.py"
    # The message's file and chunk hold its rarer words too (``FILE_WORDS``, ``LEXICAL_LEAD``): the run alone.
    monkeypatch.setattr(ranking, "FILE_WORDS", 0.0)
    monkeypatch.setattr(ranking, "LEXICAL_LEAD", 0.0)
    assert files_of(root, message)[0] == "conf/__init__.py"
    monkeypatch.setattr(ranking, "PHRASE", 0.0)
    assert files_of(root, message)[0] == "conf/loader.py"


def test_the_runs_of_a_query_are_five_words_in_a_row_as_the_code_writes_them():
    runs = phrases.Runs.of("The number of GET/POST parameters exceeded DATA_UPLOAD_MAX_NUMBER_FIELDS")
    assert ("get", "post", "parameters", "exceeded", "data") in runs.runs
    wrapped = '"The number of GET/POST parameters exceeded "\n    "settings.DATA_UPLOAD_MAX_NUMBER_FIELDS."'
    assert runs.share_held(wrapped) == pytest.approx(4 / len(runs.runs))  # "settings." breaks the run there
    assert runs.share_held("the number of parameters exceeded") == 0.0  # the words, not in a row
    assert phrases.Runs.of("JSON object with fields").runs == frozenset()  # four words: no run


@pytest.mark.parametrize(
    ("query", "only_names"),
    [
        ("IntoResponse", True),
        ("Paginator.page", True),
        ("Layer.prototype.match", True),
        ("commands/migrate.py Command.handle", True),  # a file to look in, and a method
        ("Router::route", True),
        ("fmt::format_to", True),
        ("how does QuerySet.bulk_create insert rows", False),
        ("client timeout", False),
    ],
)
def test_a_qualified_name_only_names_things(query, only_names):
    assert ranking.names_only(query) is only_names


def test_a_query_that_only_names_things_fuses_no_vectors():
    """A name's vector says what its words mean, not where it is defined: fused in, the vectors would put one
    mention above another. A question that names it keeps them."""
    code = "pub trait IntoResponse {\n    fn into_response(self) -> Response;\n}"
    definition = Hit(1, "src/response.rs", "rust", "trait", "IntoResponse", code, 1, 3, 2.0)
    used, mentioned = hit("src/handler.rs", 1, 2), hit("src/extension.rs", 1, 3)
    lexical, semantic = [definition, used, mentioned], [mentioned]

    def order(query: str, vectors: list[Hit]) -> list[int]:
        return [h.chunk_id for h in ranking.hybrid(vectors, lexical, query, Filters(), [definition])]

    assert order("IntoResponse", semantic) == order("IntoResponse", []) == [1, 2, 3]
    assert order("into_response", semantic) == order("into_response", [])
    question = "how a returned value is turned into a reply by IntoResponse"
    assert order(question, []) == [1, 2, 3]
    assert order(question, semantic) == [1, 3, 2]  # the vectors count here
    # When no word of the code is the name, the vectors are all there is.
    assert [h.chunk_id for h in ranking.hybrid(semantic, [], "IntoResponse", Filters())] == [3]


# A function whose name is three words of the question, in another order, beside files that say the words more often.
CRYPTO = {
    "utils/crypto.py": "import secrets\n\n\n"
    "def constant_time_compare(val1, val2):\n"
    '    """Return True if the two strings are equal, False otherwise."""\n'
    "    return secrets.compare_digest(force_bytes(val1), force_bytes(val2))\n",
    "utils/timesince.py": "TIME_STRINGS = {'year': 'year', 'month': 'month', 'day': 'day'}\n\n\n"
    "def timesince(d, now=None, time_strings=None):\n"
    '    """Take two datetime objects and return the time between them as a string: compare the two times and\n'
    '    format the time that passed with the given time strings, or the default ones."""\n'
    "    time_strings = time_strings or TIME_STRINGS\n"
    "    delta = now - d  # compare: the time between the two\n"
    "    return time_strings['day'] % delta.days\n",
    "db/constants.py": '"""Constants used across the ORM: each a constant string the two compilers compare in time."""\n\n'
    "LOOKUP_SEP = '__'\n",
}


def test_a_function_the_questions_words_name_in_any_order_comes_first(tmp_path, monkeypatch):
    """The question "how to compare two strings in constant time" asks for ``constant_time_compare``, though other
    files say its words more often."""
    root = words_only(tmp_path, CRYPTO)
    query = "how to compare two strings in constant time"
    assert files_of(root, query)[0] == "utils/crypto.py"
    monkeypatch.setattr(ranking, "SPELLED_OUT", 1.0)
    assert files_of(root, query)[0] != "utils/crypto.py"


@pytest.mark.parametrize(
    ("symbol", "chunk_type", "query", "factor"),
    [
        ("constant_time_compare", "function", "how to compare two strings in constant time", "SPELLED_OUT"),
        (
            "Command.ValidateRequiredFlags",
            "method",
            "required flags validation before command execution",
            "SPELLED_OUT",
        ),
        ("RequestValidationError_part1", "class", "request validation error handling", "SPELLED_OUT"),
        ("NumberRange", "class", "number parsing with defaults and range checks", None),  # two parts
        ("get_random_secret_key", "function", "how to generate a new random SECRET_KEY", "SPELLED_OUT"),  # one other
        ("get_random_secret_key_bytes", "function", "how to generate a new random secret key", None),  # two others
        ("constant_time_compare", "variable", "how to compare two strings in constant time", None),  # defines nothing
        ("constant_time_compare", "function", "constant_time_compare", "NAMED"),  # written as the name: named
    ],
)
def test_a_name_made_of_three_or_more_of_the_questions_words(symbol, chunk_type, query, factor):
    """The chunk's prior against the same chunk defining another name: a name three or more of whose parts the
    question says, and at most one other."""
    chunk = Hit(1, "src/a.py", "python", chunk_type, symbol, "body\nbody\nbody", 7, 9, 0.5)
    wants = Wants.of(query, Filters())
    expected = getattr(ranking, factor) if factor else 1.0
    assert ranking.prior(chunk, wants) / ranking.prior(replace(chunk, symbol="other"), wants) == expected


def test_a_name_whose_qualifiers_no_definition_meets_may_be_another_projects():
    """In "writing text to a std::io::Write", the crate's own ``trait Write``, in ``fmt``, meets no ``std`` or
    ``io`` (``lookup`` marks no definition qualified): the name may be the standard library's and, in a sentence,
    counts as a name that is one word of it, so the adapter the words find comes first. Where a definition meets
    them, it is the one asked for."""
    trait = Hit(
        1, "src/fmt/sink.rs", "rust", "trait", "Write", "pub trait Write {\n    fn write_str(&mut self);\n}", 1, 3, 1.0
    )
    code = "/// Writes text to a std::io::Write.\npub struct IoAdapter<W: std::io::Write> {\n    inner: W,\n}"
    adapter = Hit(2, "src/io_write.rs", "rust", "struct", "IoAdapter", code, 1, 4, 2.0)
    query, named = "writing text to a std::io::Write", [replace(trait, defines="write")]
    unmet = ranking.hybrid([], [adapter, trait], query, Filters(), named, frozenset())
    assert [hit.file_path for hit in unmet] == ["src/io_write.rs", "src/fmt/sink.rs"]
    met = ranking.hybrid([], [adapter, trait], query, Filters(), named, frozenset({trait.key}))
    assert [hit.file_path for hit in met] == ["src/fmt/sink.rs", "src/io_write.rs"]


# A method of ``Router``, and one of the same name in a file named for ``Router`` but in another type (axum's).
ROUTERS = {
    "routing/mod.rs": "/// The application's routes.\npub struct Router {\n    inner: PathRouter,\n}\n\n"
    "impl Router {\n    /// Adds a route at a path.\n    pub fn route(self, path: &str, handler: Handler) -> Self {\n"
    "        self.inner.route(path, handler);\n        self\n    }\n}\n",
    "routing/path_router.rs": "/// The router's table of paths.\npub struct PathRouter {\n    routes: Vec<Route>,\n}\n\n"
    "impl PathRouter {\n    /// Stores the route for the path.\n    pub fn route(&mut self, path: &str, handler: Handler) {\n"
    "        self.routes.push(Route::new(path, handler));\n    }\n}\n",
}


@pytest.mark.parametrize("query", ["Router::route", "Router.route"])
def test_a_method_asked_for_in_its_type_comes_from_that_type_not_the_file_the_type_names(tmp_path, query):
    """``Router::route`` is ``impl Router``'s ``route``: ``path_router.rs``, which the qualifier only names, holds
    ``PathRouter``'s."""
    root = words_only(tmp_path, ROUTERS)
    assert top(root, None, query)[0] == ("routing/mod.rs", "route")


# Two Go types' ``Render``, each in a file named for neither (gin's ``render/``).
RENDERERS = {
    "render/json.go": "package render\n\n// AsciiJSON writes JSON with non-ASCII escaped.\ntype AsciiJSON struct{ Data any }\n\n"
    "// Render writes the escaped JSON.\nfunc (r AsciiJSON) Render(w Writer) error {\n\treturn writeASCII(w, r.Data)\n}\n",
    "render/render.go": "package render\n\n// Render writes a response with its content type.\ntype Render interface {\n"
    "\tRender(w Writer) error\n}\n\n// Redirect renders a redirect.\ntype Redirect struct{ Location string }\n\n"
    "// Render writes the redirect.\nfunc (r Redirect) Render(w Writer) error {\n\treturn redirect(w, r.Location)\n}\n",
}


def test_a_go_method_asked_for_in_its_type_is_the_one_with_that_receiver(tmp_path):
    """``AsciiJSON.Render`` is ``func (r AsciiJSON) Render``: Go writes a method outside its type, and the receiver
    says which type it is of."""
    root = words_only(tmp_path, RENDERERS)
    assert top(root, None, "AsciiJSON.Render")[0] == ("render/json.go", "Render")
    assert top(root, None, "Redirect.Render")[0] == ("render/render.go", "Render")


ARGUMENTS = {
    "core/Arguments.java": "package core;\n\npublic interface Arguments {\n  boolean containsKey(String key);\n\n"
    "  long getLong(String key);\n\n  String getString(String key);\n}\n",
    "core/MapArguments.java": "package core;\n\nimport java.util.Map;\n\npublic class MapArguments implements Arguments {\n"
    "  private final Map<String, Object> map;\n\n  public long getLong(String key) {\n"
    "    return ((Number) map.get(key)).longValue();\n  }\n}\n",
    "jni/JavaScriptValue.kt": "package jni\n\nclass JavaScriptValue(private val handle: Long) {\n"
    "  fun getLong(): Long = readLong(handle)\n\n  fun getString(): String = readString(handle)\n}\n",
}


def test_an_interfaces_method_asked_for_in_its_type_comes_from_the_interface(tmp_path):
    """``Arguments.getLong`` is the interface's ``long getLong(String key);``, a declaration without a body, in the
    interface's one chunk (as ChunkHound stores a short Java interface): not another type's ``getLong`` in a chunk
    of its own, nor the implementation in ``MapArguments.java``."""
    for name, text in ARGUMENTS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    conftest.chunked_index(
        tmp_path,
        [
            ("core/Arguments.java", 3, 9, "interface", "Arguments"),
            ("core/MapArguments.java", 5, 11, "class", "MapArguments"),
            ("core/MapArguments.java", 8, 10, "method", "MapArguments.getLong"),
            ("jni/JavaScriptValue.kt", 3, 7, "class", "JavaScriptValue"),
            ("jni/JavaScriptValue.kt", 4, 4, "function", "getLong"),
            ("jni/JavaScriptValue.kt", 6, 6, "function", "getString"),
        ],
    )
    assert files_of(tmp_path, "Arguments.getLong")[0] == "core/Arguments.java"
    assert files_of(tmp_path, "MapArguments.getLong")[0] == "core/MapArguments.java"
