"""Names: what a person would type or search for; ChunkHound's made-up labels never reach the answer."""

from __future__ import annotations

import pytest

from onetool_code.names import MAX_NAME, defining_line, definition_lines, definition_of, display_name, shorten

MARKDOWN = [
    "# httpx",  # 1
    "",
    "## 0.28.0 (28th November, 2024)",  # 3
    "",
    "* Fix cases of [double escaping](https://example.org) in **URLs**.",  # 5
    "* Handle envvar proxies.",
    "",
    "Setext title",  # 8
    "------------",
    "",
    "Some text.",  # 11
]
TOML = ["[project]", 'name = "httpx"', "", "[[tool.mypy.overrides]]", 'module = "tests.*"']


@pytest.mark.parametrize(
    ("symbol", "chunk_type", "language", "shown"),
    [
        # real names, ChunkHound's _partN suffixes removed
        ("load_config", "function", "python", "load_config"),
        ("run_command_part1", "function", "python", "run_command"),
        ("Big_part1_part2", "class", "python", "Big"),
        ("name.jobs.docset.steps.uses", "key_value", "yaml", "name.jobs.docset.steps.uses"),
        # names that look like labels but are code's own
        ("import_module", "function", "python", "import_module"),
        ("from_dict", "method", "python", "from_dict"),
        ("paragraph_style", "variable", "python", "paragraph_style"),
        ("table_name", "variable", "python", "table_name"),
        ("elixir_source_path", "function", "elixir", "elixir_source_path"),
        ("parse_document", "function", "python", "parse_document"),
        # ChunkHound's synthetic labels in code (measured on 6.1.0)
        ("file_structure", "namespace", "python", ""),
        ("elixir_source_part1_part2", "namespace", "elixir", ""),  # a file's top level, as other languages call it
        ("bash_script", "namespace", "bash", ""),
        ("lua_chunk", "namespace", "lua", ""),
        ("json_document", "document", "json", ""),
        ("comment_line_105", "comment", "python", ""),
        ("module_docstring_line_1", "comment", "python", ""),
        ("definition_line_72", "function", "python", ""),
        ("block_line_5", "block", "python", ""),
        ("block_line_104_block_line_105", "block", "python", ""),
        ("embedded_sql_line_102", "embedded_sql", "python", ""),
        ("doc_comment_line_1", "comment", "rust", ""),
        ("unnamed", "comment", "python", ""),
        ("unnamed_definition", "property", "swift", ""),  # a Swift ``let``/``var`` property (and Elixir's)
        ("unnamed_block", "block", "elixir", ""),
        ("unnamed_structure", "block", "kotlin", ""),  # ``unnamed_<concept>``, any of its five concepts
        ("unnamed_attr", "definition", "elixir", ""),  # its language mappings' own
        ("unnamed_target", "block", "makefile", ""),
        ("unnamed_func", "function", "go", "unnamed_func"),  # ... but a code name that starts so is a name
        ("import_typing_from_contextlib_from_._client", "import", "python", ""),
        ("from_.__version___from_._api_from_._auth", "import", "python", ""),
        ("package_org_bookshelf_admin_import_LocalDate", "import", "java", ""),
        ("paragraph_3", "paragraph", "text", ""),
        ("", "function", "python", ""),
    ],
)  # fmt: skip
def test_code_names(symbol, chunk_type, language, shown):
    assert display_name(symbol, chunk_type, language) == shown


@pytest.mark.parametrize(
    ("symbol", "chunk_type", "start_line", "shown"),
    [
        ("heading_1", "function", 1, "httpx"),
        ("heading_3", "function", 3, "0.28.0 (28th November, 2024)"),
        ("item_Fix_cases_of_paragraph_Fix_cases_of_double_escaping_item_Handle_envvar_paragraph_Handle_envvar_",
         "block", 5, "0.28.0 (28th November, 2024)"),
        ("unordered_list", "block", 6, "0.28.0 (28th November, 2024)"),
        ("paragraph_All_notable_changes_to_this", "block", 2, "httpx"),
        ("code_block_python", "code_block", 7, "0.28.0 (28th November, 2024)"),
        ("link_ref_please_donate_today", "import", 6, "0.28.0 (28th November, 2024)"),
        ("comment_line_1_comment_line_5_comment_line_7", "comment", 5, "0.28.0 (28th November, 2024)"),
        ("heading_8", "function", 8, "Setext title"),
        ("paragraph_Some_text", "block", 11, "Setext title"),
    ],
)  # fmt: skip
def test_markdown_chunks_are_named_by_the_nearest_heading(symbol, chunk_type, start_line, shown):
    assert display_name(symbol, chunk_type, "markdown", MARKDOWN, start_line) == shown


def test_markdown_heading_text_loses_links_and_emphasis():
    lines = ["## Fix [double escaping](https://x.org) in **URLs** and `quote()`", "text"]
    assert display_name("paragraph_text", "block", "markdown", lines, 2) == "Fix double escaping in URLs and quote()"


def test_a_document_without_a_heading_above_has_no_name():
    assert display_name("paragraph_Intro", "block", "markdown", ["Intro text.", "", "# Later"], 1) == ""


@pytest.mark.parametrize(("start_line", "shown"), [(2, "project"), (5, "tool.mypy.overrides")])
def test_toml_chunks_are_named_by_their_table(start_line, shown):
    assert display_name("definition_httpx", "key_value", "toml", TOML, start_line) == shown


def test_no_name_is_longer_than_the_limit():
    long_heading = ["# " + "Support for the new proxy configuration API " * 4]
    assert len(display_name("heading_1", "function", "markdown", long_heading, 1)) <= MAX_NAME
    assert shorten("a" * 100) == "a" * (MAX_NAME - 3) + "..."
    assert shorten("Support for the new proxy configuration API and much more besides, really") == (
        "Support for the new proxy configuration API and much more..."
    )
    identifier = "test_digest_auth_returns_no_auth_if_no_digest_header_in_response"  # 64 characters
    assert display_name(identifier, "function", "python") == identifier[:57] + "..."


def declares(name: str, code: str) -> list[bool]:
    """Whether ``code`` declares ``name`` for each engine that reads the pattern: Python's ``re`` on a head line
    (``definition_of``) and on a whole chunk (``defining_line``), RE2 on a snapshot's rows, DuckDB on the index."""
    import duckdb
    import re2

    pattern = definition_lines([name])
    with duckdb.connect() as con:
        in_duckdb = con.execute("SELECT regexp_matches(?, ?)", [code, pattern]).fetchone()[0]
    return [
        bool(definition_of(frozenset({name})).search(code)),
        bool(defining_line(name).search(code)),
        bool(re2.compile(pattern.encode()).search(code.encode())),
        bool(in_duckdb),
    ]


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("request", "public protocol Request {"),  # Swift
        ("ratelimiter", "actor RateLimiter {"),
        ("router", "distributed actor Router {"),
        ("headers", "public typealias Headers = [String: String]"),
        ("send", "    public func send<R: Request>(_ request: R) async throws -> R.Response {"),
        ("send", "    suspend fun <R> send(request: Request<R>): Response {"),  # Kotlin
        ("send", "fun <T : Comparable<T>> send(x: T)"),
        ("withretry", "fun HttpClient.withRetry(times: Int): HttpClient = this"),
        ("send", "fun <K, V> Map<K, V>.send()"),
        ("connectionpool", "object ConnectionPool {"),
        ("pool", "internal object Pool {"),  # after its modifiers and annotations
        ("create", "    @JvmStatic fun create(): Pool = Pool()"),
        ("plus", "    operator fun plus(other: Money): Money"),
        ("router", "const val ROUTER = 1"),
        ("timeout", "    val timeout: Duration = Duration.ofSeconds(10)"),
        ("router", "defmodule MyApp.Router do"),  # Elixir
        ("normalize", '  defp normalize(path), do: String.trim_trailing(path, "/")'),
        ("get", "  defmacro get(path, controller) do"),
        ("renderable", "defprotocol MyApp.Renderable do"),
        ("my_macro", "macro_rules! my_macro {"),  # Rust
        ("routing", "pub mod routing;"),
        ("routing", "pub(in crate::app) mod routing;"),
        ("routing", "#[cfg(test)] mod routing {"),
        ("name", "local function M.name(x)"),  # Lua
        ("handle", "func (r *Router) Handle(pattern string) {"),  # Go, as before
        ("zodcheck", "export class $ZodCheck {"),
        ("nextstring", "  @Override public String nextString() throws IOException {"),  # Java: a return type first
        ("fromjson", "  public static <T> T fromJson(String json, Class<T> classOfT) throws JsonSyntaxException {"),
        ("names", "  private List<String> names() {"),
        ("tostring", "    public override string ToString() {"),  # C#
        ("data", "  const char* data() const noexcept {"),  # C++
        ("tostring", "std::string toString() const {"),
        ("error_already_set", "class PYBIND11_EXPORT_EXCEPTION error_already_set : public std::exception {"),
        ("file", "class FMT_API file {"),  # an export macro between the word and the name
        ("qobject", "class Q_CORE_EXPORT QObject"),
        ("loop", "struct loop;"),  # declared ahead of its definition
        ("getboolean", "  boolean getBoolean(String key);"),  # an interface's method, which has no body
        ("keys", "  @NonNull Set<String> keys();"),
        ("parse", "    public abstract Node parse(Reader in) throws IOException;"),
        ("size", "  int size();"),
    ],
)
def test_a_line_that_declares_a_name_in_any_language_chunkhound_parses(name, line):
    assert declares(name, line) == [True] * 4


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("httpclient", "extension HTTPClient {"),  # extends a type declared elsewhere
        ("renderable", "defimpl MyApp.Renderable, for: Map do"),  # implements a protocol declared elsewhere
        ("normalize", "  def clean(path), do: normalize(path)"),  # a use
        ("withretry", "    fun run(c: HttpClient) = c.withRetry(3)"),
        # English words where code does not start, or written otherwise than the keyword
        ("gsonbuilder", "   * Configures the object gsonBuilder returns"),
        ("gsonbuilder", "    the object gsonBuilder holds"),
        ("typeadapter", "        Object typeAdapter, TypeToken<?> exactType,"),
        # a qualified name in prose: only Kotlin's, Elixir's and Lua's words take a qualifier, where code starts
        ("queryset", "# see the class django.db.models.QuerySet for details"),
        ("join", '    """Return what the function os.path.join returns."""'),
        # a call or an anonymous class, where a return type would stand
        ("thread", "    executor.submit(new Thread() {"),
        ("thread", "    new Thread() {"),
        ("tostring", "    return toString() {"),
        ("getboolean", "    return getBoolean(key);"),  # a call, which a statement is
        ("getboolean", "    boolean enabled = getBoolean(key);"),
        # a type in use in C and C++, after the words that declare elsewhere
        ("error_already_set", "    } catch (const error_already_set &) {"),
        ("format_args", "void vprint(const format_args& args);"),
        ("uv_loop_s", "int uv_run(struct uv_loop_s* loop, int mode);"),
        ("handler", "// the class HTTP handler"),  # capitals without an underscore are a word, not a macro
    ],
)
def test_a_line_that_extends_implements_or_uses_a_name_does_not_declare_it(name, line):
    assert declares(name, line) == [False] * 4


def test_a_declaration_is_on_one_line_not_a_word_and_the_next_lines_name():
    """A comment that ends with "type" (or a Go ``const (...)`` group) does not declare the name starting the next
    line, and blank lines before a declaration or an assignment do not hide it."""
    for code in ("// of the runtime type\n    TypeAdapter<T> chosen = delegate;", "const (\n\tA = 1\n)\n\nTypeAdapter"):
        assert declares("typeadapter", code)[1:] == [False] * 3
    for code in ("\n" * 2000 + "def send(x):", "\n\n  \n" * 500 + "send = function (x) {"):
        assert declares("send", code)[1:] == [True] * 3
