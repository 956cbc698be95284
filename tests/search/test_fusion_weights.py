"""The weights of the hybrid ranking's lists and kinds of file, on hits built by hand (``ranking.hybrid`` is a pure
function of its lists): what each weight decides when the lists disagree."""

from __future__ import annotations

from dataclasses import replace

import pytest

from onetool_code.hits import Hit
from onetool_code.schema import Filters
from onetool_code.search import ranking


def chunk(path: str, symbol: str, code: str, score: float, language: str = "c", kind: str = "function") -> Hit:
    return Hit(0, path, language, kind, symbol, code, 10, 30, score)


def order(query: str, lexical: list[Hit], definitions: tuple[Hit, ...] = ()) -> list[str]:
    ranked = ranking.hybrid([], lexical, query, Filters(), definitions=definitions)
    return list(dict.fromkeys(hit.file_path for hit in ranked))


def test_when_the_definitions_list_and_the_words_disagree_the_words_decide():
    # Both files define render_row; the named-definitions list has a.h first, the words b.h. Weighed alike the
    # two would tie (and the path would put a.h first); the words' own list weighs more.
    in_a = chunk("a.h", "render_row", "void render_row(Row *row) {\n  draw(row);\n}", 2.0)
    in_b = chunk("b.h", "render_row", "void render_row(Row *row, Sink *out) {\n  write(out, row);\n}", 1.0)
    definitions = (in_a, in_b)
    lexical = [replace(in_b, score=9.0), replace(in_a, score=8.0)]
    assert order("render_row", lexical, definitions) == ["b.h", "a.h"]


def test_a_readme_that_mentions_a_name_comes_after_the_code_that_uses_it():
    # chi's shape: chi.go declares the Router interface, mux.go builds one, the README mentions it in prose and
    # leads the words' list by far.
    declared = chunk("chi.go", "Router", "type Router interface {\n  Get(pattern string)\n}", 3.0, "go", "interface")
    builds = chunk(
        "mux.go", "NewMux", "// NewMux returns a Router.\nfunc NewMux() *Mux {\n  return &Mux{}\n}", 4.0, "go"
    )
    readme = chunk("README.md", "Router", "The Router interface lets you mount a Router.", 9.0, "markdown", "section")
    others = [
        chunk(f"x{i}.go", f"helper{i}", f"func helper{i}() {{}}\n// Router\n", 2.0 - i / 100, "go") for i in range(30)
    ]
    files = order("Router", [readme, builds, declared, *others], (declared,))
    assert files.index("mux.go") < files.index("README.md")


def test_a_qualified_name_found_only_by_its_definition_leads_a_same_named_method_the_words_found():
    # Django's shape: ``Template.render`` is defined in template/base.py, which the words miss; a renderer's
    # ``render`` in forms/renderers.py leads their list and its file is named by the query's word. The
    # named-definitions list, exact when the query qualifies the name, weighs as much as the words then.
    wanted = chunk(
        "template/base.py",
        "Template.render",
        "    def render(self, context):\n        return 1\n",
        2.0,
        "python",
        "method",
    )
    other = chunk(
        "forms/renderers.py",
        "BaseRenderer.render",
        "    def render(self, name, context):\n        return 2\n",
        1.0,
        "python",
        "method",
    )
    ranked = ranking.hybrid(
        [],
        [replace(other, score=9.0)],
        "Template.render",
        Filters(),
        definitions=(wanted, other),
        qualified=frozenset({wanted.key}),
    )
    assert ranked[0].file_path == "template/base.py"


def test_a_definition_two_words_of_a_question_spell_weighs_as_a_name_asked_alone():
    # gson's shape: "JSON object with named fields" writes no name as code, and ``lookup`` finds ``class
    # JsonObject`` by two of its words run together; the words' list has it 20th, under a file about field names.
    # No word of the question was written as that name by chance, so its list is not halved as a name written
    # mid-sentence is (``IN_PROSE``).
    declared = replace(
        chunk("elements.ts", "JsonObject", "export class JsonObject {\n  members = new Map();\n}", 1.0, "typescript"),
        defines="jsonobject",
    )
    naming = chunk("naming.ts", "translateName", "// the JSON object's named fields\nfunction translateName() {}", 9.0)
    others = [chunk(f"x{i}.ts", f"helper{i}", f"function helper{i}() {{}}", 5.0 - i / 100) for i in range(18)]
    lexical = [naming, *others, replace(declared, score=4.5)]
    assert order("JSON object with named fields", lexical, (declared,))[0] == "elements.ts"


def test_a_name_one_word_of_a_sentence_weighs_less_than_the_file_the_sentence_names():
    # commons-lang's shape: "toString builder for ..." asks for ``ToStringBuilder.java``, which the words find
    # second; every class defines ``toString``, and the one the words find first is only one of them.
    method = "  @Override\n  public String toString() {\n    return name;\n  }"
    defining = [chunk(f"lang/{n}.java", "toString", method, 9.0 - i, "java", "method") for i, n in enumerate("ABC")]
    defining = [replace(hit, defines="tostring") for hit in defining]
    builder = chunk(
        "lang/builder/ToStringBuilder.java",
        "ToStringBuilder",
        "/** A human-readable description of an object. */\npublic class ToStringBuilder {\n}",
        8.5,
        "java",
        "class",
    )
    lexical = [defining[0], builder, *defining[1:]]
    query = "toString builder for human-readable object descriptions"
    assert order(query, lexical, tuple(defining))[0] == "lang/builder/ToStringBuilder.java"
    assert order("toString", lexical, tuple(defining))[0] == "lang/A.java"  # the name alone: its definitions


def test_a_sentence_hit_far_below_the_first_by_its_words_keeps_less_of_its_rank():
    # rxjs's shape: the operator whose doc comment says the whole question leads the words' list by far (BM25 11.5),
    # and reciprocal ranks alone put the next file's function (8.3) level with it. When words alone answer a
    # sentence, a hit keeps a share of its BM25 score under the first's; a name's hits keep their ranks alone, and
    # so do all hits when vectors rank beside the words.
    first = chunk("sequenceEqual.ts", "sequenceEqual", "export function sequenceEqual() {}", 11.5, "typescript")

    def second(query: str, score: float, vectors: bool = False) -> float:
        other = chunk("fromEvent.ts", "fromEvent", "export function fromEvent() {}", score, "typescript")
        semantic = [first, other] if vectors else []
        scores = {hit.file_path: hit.score for hit in ranking.hybrid(semantic, [first, other], query, Filters())}
        return scores["fromEvent.ts"] / scores["sequenceEqual.ts"]

    sentence = "compare two streams element by element and emit whether they produced the same values"
    close, far = second(sentence, 11.4), second(sentence, 5.75)
    assert far < close
    # Exactly: the second's reciprocal rank gives up ``LEXICAL_LEAD`` of itself for as much of its share of the
    # first's.
    assert close - far == pytest.approx(ranking.LEXICAL_LEAD * (11.4 - 5.75) / 11.5, rel=1e-9)
    assert second("fromEvent sequenceEqual", 11.4) == second("fromEvent sequenceEqual", 5.75)
    assert second(sentence, 11.4, vectors=True) == second(sentence, 5.75, vectors=True)


def test_a_file_whose_words_say_the_question_as_a_whole_rises_by_its_file_score():
    # Mercurial's shape: simplemerge.py is the module of three-way text merges; one function of filemerge.py comes
    # first by the chunks' scores. Each file's best hit gains a tenth of the best score for its file score (BM25
    # over whole files) over the best file's, times its kind.
    one = chunk("filemerge.py", "_imerge3", "def _imerge3(repo):\n    pass", 10.0, "python")
    module = chunk("simplemerge.py", "render_merge3", "def render_merge3(m3):\n    pass", 9.0, "python")
    tests = chunk("tests/test_simplemerge.py", "test_merge3", "def test_merge3():\n    pass", 8.0, "python")
    hits = [one, module, tests]

    def scores(query: str, files: dict[str, float]) -> dict[str, float]:
        return {hit.file_path: hit.score for hit in ranking.hybrid([], hits, query, Filters(), files=files)}

    sentence = "three-way text merge producing conflict markers"
    plain = scores(sentence, {})
    whole = scores(sentence, {"simplemerge.py": 12.0, "filemerge.py": 6.0, "tests/test_simplemerge.py": 12.0})
    assert list(plain)[:2] == ["filemerge.py", "simplemerge.py"]
    assert list(whole)[:2] == ["simplemerge.py", "filemerge.py"]
    gains = {path: whole[path] - plain[path] for path in plain}
    assert gains["simplemerge.py"] == pytest.approx(2 * gains["filemerge.py"], rel=1e-9)
    assert gains["tests/test_simplemerge.py"] == pytest.approx(ranking.TESTS * gains["simplemerge.py"], rel=1e-9)
    # A name written as code is answered where it is defined: the words of whole files do not weigh.
    assert scores("renderMerge3", {"simplemerge.py": 12.0}) == scores("renderMerge3", {})


def test_vectors_that_find_files_no_word_points_to_weigh_less():
    # A weak model's shape: its nearest chunk is in a file neither the words nor the named definitions found.
    # Weighed alike, that chunk (defining a function) would lead the words' first (a short block, defining nothing).
    words = chunk(
        "loop.py", "", "for attempt in range(retries):\n    sleep(backoff * 2 ** attempt)", 9.0, "python", "block"
    )
    words = replace(words, end_line=words.start_line + 1)
    shared = chunk("client.py", "send", "def send(request):\n    return transport(request)", 5.0, "python")
    stray = chunk("colors.py", "blend", "def blend(a, b):\n    return mix(a, b)", 0.9, "python")
    query = "retry failed requests with exponential backoff"

    def ahead(semantic: list[Hit]) -> bool:
        files = [hit.file_path for hit in ranking.hybrid(semantic, [words, shared], query, Filters())]
        return files.index("colors.py") < files.index("loop.py")

    assert not ahead([stray])  # none of the vectors' files is the words': half the weight
    assert ahead([stray, shared])  # half of them: three quarters of the weight
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ranking, "VECTORS_KEPT", 1.0)
        assert ahead([stray])


def test_the_agreement_is_the_share_of_the_vectors_first_files_the_words_or_the_definitions_found():
    def hits(*paths: str) -> list[Hit]:
        return [chunk(path, "f", "def f(): pass", 1.0, "python") for path in paths]

    agreement = ranking._agreement
    assert agreement(hits("a.py", "b.py", "a.py"), hits("a.py"), []) == 0.5  # files, not hits
    assert agreement(hits("a.py", "b.py"), [], hits("b.py")) == 0.5  # a named definition's file counts
    assert agreement(hits("a.py"), [], []) == 1.0  # nothing to agree with: the vectors alone
    many = [f"f{i}.py" for i in range(30)]
    assert agreement(hits(*many[:12]), hits(*many[10:12]), []) == 0.0  # the vectors' first ten files only
    assert agreement(hits("a.py"), hits(*many, "a.py"), []) == 0.0  # the words' first thirty hits only
