"""What a file's path and its exports say in the hybrid ranking (issue 35): the file a question names by its own
name (a hub file by its folder's), the hub that re-exports a name, legacy copies below current code, a name
asked alone. Each on a real index (ChunkHound's schema, our indexer, words only as without an embeddings server),
with the signal turned off beside it to show that it is what decides."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hybrid import make_project, top

from onetool_code.schema import Filters
from onetool_code.search import abbreviations, file_roles, ranking, wants
from onetool_code.search.wants import Wants


@pytest.fixture(autouse=True)
def _fresh_snapshots(tmp_path, monkeypatch):
    monkeypatch.setenv("ONETOOL_CODE_CACHE_DIR", str(tmp_path / "cache"))


def files(root: Path, query: str) -> list[str]:
    return list(dict.fromkeys(path for path, _ in top(root, None, query)))


# A crate whose extractor trait is defined elsewhere and made public by the module's hub file; two leaf files use
# the name more often than the hub says it.
CRATE = {
    "src/extract/mod.rs": "//! Types and traits for taking data out of requests.\n\n"
    "pub use core_crate::extract::{FromRequest, FromRequestParts, Request};\n\n"
    "pub mod query;\n\npub fn has_content_type(headers: &HeaderMap, expected: &str) -> bool {\n"
    "    headers.get(CONTENT_TYPE).map(|value| value == expected).unwrap_or(false)\n}\n",
    "src/middleware/from_fn.rs": "use crate::extract::FromRequest;\n\n"
    "pub struct Wrapped<T>(pub T);\n\n"
    "impl<S, T> FromRequest<S> for Wrapped<T>\nwhere\n    T: FromRequest<S>,\n{\n"
    "    type Rejection = T::Rejection;\n\n"
    "    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {\n"
    "        // FromRequest of the inner value, then wrapped\n"
    "        T::from_request(req, state).await.map(Wrapped)\n    }\n}\n",
    "src/json.rs": "use crate::extract::FromRequest;\n\npub struct Json<T>(pub T);\n\n"
    "impl<T, S> FromRequest<S> for Json<T>\nwhere\n    T: DeserializeOwned,\n{\n"
    "    type Rejection = JsonRejection;\n\n"
    "    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {\n"
    "        let bytes = Bytes::from_request(req, state).await?;\n        Self::from_bytes(&bytes)\n    }\n}\n",
}


def test_the_hub_file_that_re_exports_a_name_comes_first_for_it(tmp_path, monkeypatch):
    root = make_project(tmp_path / "crate", CRATE, None)
    assert files(root, "FromRequest")[0] == "src/extract/mod.rs"
    monkeypatch.setattr(ranking, "EXPORTED", 1.0)
    assert files(root, "FromRequest")[0] != "src/extract/mod.rs"  # the uses, without the signal


def test_a_re_export_is_a_statement_that_makes_the_name_public():
    assert file_roles.re_exports("pub use a::b::{FromRequest, Other};", "src/extract/mod.rs", {"fromrequest"})
    assert file_roles.re_exports("export { ZodError, type Issue } from './errors';", "src/index.ts", {"zoderror"})
    assert file_roles.re_exports("from .client import ClientSession\n", "pkg/__init__.py", {"clientsession"})
    # an import elsewhere is a use, and a use statement that is not public says nothing
    assert not file_roles.re_exports("from .client import ClientSession\n", "pkg/app.py", {"clientsession"})
    assert not file_roles.re_exports("use a::b::FromRequest;", "src/json.rs", {"fromrequest"})
    assert not file_roles.re_exports("pub use a::b::Other;", "src/extract/mod.rs", {"fromrequest"})


# Two files about completion: the one the question names whole, and one whose name adds a word, with more of the
# question's words in it.
COMPLETIONS = {
    "completions.py": "def handle_complete_request(command, args):\n"
    '    """Answer a shell completion request for the words typed so far."""\n'
    "    return command.find(args).complete(args[-1])\n",
    "bash_completions.py": "def write_bash_completion(command, out):\n"
    '    """Bash completion script: each completion request of the shell is handled by calling the program\n'
    '    back; completion words come from its request handling."""\n'
    "    out.write(bash_completion_template.format(name=command.name, request=complete_request_handling))\n\n\n"
    "def bash_completion_request_handling(out):\n"
    '    """Shell completion: the request handling of bash completion."""\n'
    "    out.write('complete -F __handle_request')\n",
}


def test_a_hub_file_goes_by_its_folder_and_a_file_by_the_words_of_its_name():
    assert file_roles.own_name("src/extract/mod.rs") == "extract"
    assert file_roles.own_name("aiohttp/__init__.py") == "aiohttp"
    assert file_roles.own_name("lib/router/index.js") == "router"
    assert file_roles.own_name("bash_completionsV2.go") == "bash_completionsV2"
    stems = {"shell", "complet", "request", "handl"}
    assert file_roles.name_focus("completions.go", stems) == 1.0
    assert file_roles.name_focus("bash_completions.go", stems) == 0.5
    assert file_roles.name_focus("src/extract/mod.rs", {"extractor"}) == 1.0  # a stem the other's start
    assert file_roles.name_focus("security/http.py", {"httpexcept"}) == 0.0  # not a word that only starts so


# The same error class kept in a legacy copy beside the current version.
VERSIONS = {
    "v3/errors.ts": "export class ZodError extends Error {\n  issues: ZodIssue[] = [];\n"
    "  constructor(issues: ZodIssue[]) {\n    super();\n    this.issues = issues;\n  }\n}\n",
    "v4/core/errors.ts": "export class ZodError extends Error {\n  issues: Issue[] = [];\n"
    "  constructor(issues: Issue[]) {\n    super();\n    this.issues = issues;\n  }\n}\n",
}


def test_a_legacy_copy_comes_after_current_code_unless_asked_for(tmp_path, monkeypatch):
    root = make_project(tmp_path / "lib", VERSIONS, None)
    assert files(root, "ZodError")[0] == "v4/core/errors.ts"
    assert files(root, "v3 ZodError")[0] == "v3/errors.ts"
    monkeypatch.setattr(ranking, "LEGACY", 1.0)
    assert files(root, "ZodError")[0] == "v3/errors.ts"  # alike but for the path, which then orders them


def test_a_legacy_copy_named_for_the_name_still_comes_after_current_code(tmp_path, monkeypatch):
    """zod's ``v3/ZodError.ts`` is named for what is asked and declares it as a class; the current
    ``v4/classic/errors.ts`` declares it as an interface: the file's name must not lift the old copy back first."""
    legacy = {
        "v3/ZodError.ts": VERSIONS["v3/errors.ts"],
        "v4/classic/errors.ts": "export interface ZodError extends Error {\n  issues: Issue[];\n"
        "  format(): string;\n  flatten(): object;\n}\n",
    }
    root = make_project(tmp_path / "lib", legacy, None)
    assert files(root, "ZodError")[0] == "v4/classic/errors.ts"
    monkeypatch.setattr(ranking, "LEGACY", 0.7)  # the weight before: the file's name outweighed it
    assert files(root, "ZodError")[0] == "v3/ZodError.ts"


def test_legacy_paths():
    paths = ["v3/types.ts", "v4/core/schemas.ts", "fastapi/_compat/v2.py", "deprecated/old_api.go", "api/v1/x.go"]
    assert file_roles.legacy(paths, set()) == {"v3/types.ts", "fastapi/_compat/v2.py", "deprecated/old_api.go"}
    assert file_roles.legacy(paths, {"v3", "compat"}) == {"deprecated/old_api.go"}
    # A file is a legacy copy by the name of one; one named for what it handles is current code.
    named = ["v4/classic/compat.ts", "src/legacy.py", "mercurial/obsolete.py", "serde_derive/src/deprecated.rs"]
    assert file_roles.legacy(named, set()) == {"v4/classic/compat.ts", "src/legacy.py"}
    assert file_roles.legacy(["old/obsolete/x.py", "obsolete/y.py"], set()) == {"old/obsolete/x.py", "obsolete/y.py"}


ROUTER = {
    "chi.go": "package chi\n\n// Router consists of the core routing methods used by chi's Mux.\n"
    "type Router interface {\n\thttp.Handler\n\tUse(middlewares ...func(http.Handler) http.Handler)\n"
    "\tRoute(pattern string, fn func(r Router)) Router\n}\n",
    "middleware/route_headers.go": "package middleware\n\n// RouteHeaders is a header-based router.\n"
    "func RouteHeaders() HeaderRouter {\n\treturn HeaderRouter{}\n}\n\n"
    "// HeaderRouter routes by header: a router of routers.\ntype HeaderRouter map[string][]HeaderRoute\n\n"
    "func (hr HeaderRouter) Route(header, match string) HeaderRouter {\n\treturn hr\n}\n",
}


def test_a_name_asked_alone_finds_its_definition_before_files_whose_names_start_so(tmp_path):
    root = make_project(tmp_path / "mux", ROUTER, None)
    assert files(root, "Router")[0] == "chi.go"


def test_examples_folders_count_as_documentation():
    assert file_roles.is_doc("_examples/rest/main.go", "go")
    assert file_roles.is_doc("examples/basic.py", "python")
    assert not file_roles.is_doc("middleware/example_test_helpers.go", "go")


# The code that reads a JSON stream, in a file named otherwise, and its test, named by the question and saying its
# words more often, in more places.
_CASE = (
    "def test_json_reader_{0}():\n    # the streaming JSON reader, {0}: a JSON stream read by the reader\n"
    "    assert next_token(stream_of('{0}')) == '{0}'[:1]\n\n\n"
)
READER = {
    "stream/tokens.py": 'def next_token(stream):\n    """One token of the stream."""\n    return stream.read(1)\n',
    "tests/stream/test_json_reader.py": "from stream.tokens import next_token\n\n\n"
    + "".join(_CASE.format(case) for case in ("array", "object", "string", "number", "empty")),
}


def test_a_test_file_named_for_the_question_is_still_a_test(tmp_path, monkeypatch):
    """What a file's name and its many hits say of it is weighed by the kind of file it is, as its hits are."""
    root = make_project(tmp_path / "lib", READER, None)
    query = "reader of a JSON stream"
    assert files(root, query)[0] == "stream/tokens.py"
    evidence = ranking._file_evidence
    monkeypatch.setattr(
        ranking,
        "_file_evidence",
        lambda scored, wants, kinds, met, files: evidence(scored, wants, {}.fromkeys(kinds, 1.0), met, files),
    )
    assert files(root, query)[0] == "tests/stream/test_json_reader.py"  # lifted as much as code was


# A WebSocket client's own file, named by the short form, beside a session that writes the question's words more.
WEBSOCKETS = {
    "client_ws.py": "class ClientWebSocketResponse:\n"
    '    """The client end of a WebSocket connection."""\n\n'
    "    async def send_str(self, data):\n        await self._writer.send_frame(data)\n\n"
    "    async def receive(self):\n        return await self._reader.read()\n",
    "client.py": "class ClientSession:\n"
    '    """A client session: requests, cookies and WebSocket connections."""\n\n'
    "    async def ws_connect(self, url):\n"
    '        """Open a WebSocket client connection: the client side of the WebSocket handshake."""\n'
    "        response = await self.request('GET', url, headers=websocket_headers())\n"
    "        return ClientWebSocketResponse(response)\n",
}


@pytest.mark.parametrize(
    ("project", "query", "first", "turned_off", "first_without"),
    [
        # the file whose own name the question says whole, though another says more of its words
        (COMPLETIONS, "shell completion request handling", "completions.py", (ranking, "FILE_FOCUS", 0.0),
         "bash_completions.py"),
        # a word's short form in code names the file, though another says the word more often (in lowercase: the
        # initials of "WebSocket" name it too)
        (WEBSOCKETS, "websocket client implementation", "client_ws.py",
         (file_roles, "short_forms", lambda word: frozenset()), "client.py"),
    ],
    ids=["its own name", "a short form in code"],
)  # fmt: skip
def test_the_file_the_question_names_comes_first(
    tmp_path, monkeypatch, project, query, first, turned_off, first_without
):
    root = make_project(tmp_path / "project", project, None)
    assert files(root, query)[0] == first
    monkeypatch.setattr(*turned_off)
    assert files(root, query)[0] == first_without


# The same generator in its first version and in a second, which says the question's words more often.
VERSIONED = {
    "bash_completions.py": "def generate_bash_completion(command, out):\n"
    '    """Bash completion generation: write the script the shell sources."""\n'
    "    out.write(bash_template.format(name=command.name))\n",
    "bash_completionsV2.py": "def generate_bash_completion_v2(command, out):\n"
    '    """Bash completion generation, second version: bash completion generation with descriptions."""\n'
    "    out.write(bash_v2_template.format(name=command.name, completion=command.completion))\n",
}


def test_a_version_is_a_word_of_a_file_s_name(tmp_path):
    """A question that does not say "v2" says less of ``bash_completionsV2.py``'s name than of the first
    version's, which comes first though the second says its words more often; one that says it, the other way."""
    root = make_project(tmp_path / "project", VERSIONED, None)
    assert files(root, "bash completion generation")[0] == "bash_completions.py"
    assert files(root, "bash completion generation v2")[0] == "bash_completionsV2.py"
    assert file_roles.name_words("bash_completionsV2.go") == ("bash", "complet", "v2")
    assert file_roles.name_words("src/http2.rs") == ("http",)  # digits alone are no word


def test_a_short_form_names_a_file_only_as_a_whole_part_of_its_name():
    assert file_roles.path_words("aiohttp/client_ws.py", frozenset({"websocket"})) == 1
    assert file_roles.path_words("django/db/utils.py", frozenset({"database"})) == 1  # the folder
    assert file_roles.path_words("serde/src/de/mod.rs", frozenset({"deserialization"})) == 1
    assert file_roles.path_words("settings/cfg.go", frozenset({"configured"})) == 1  # by the word's stem
    assert file_roles.path_words("serde_core/src/de/impls.rs", frozenset({"implementations"})) == 1  # a plural
    assert file_roles.path_words("strategy.go", frozenset({"string"})) == 0  # ``str`` is only its start
    assert file_roles.path_words("require.js", frozenset({"request"})) == 0
    assert file_roles.path_words("client.py", frozenset({"websocket"})) == 0
    assert file_roles.path_words("src/de.rs", frozenset({"source"})) == 0  # the folder that holds the code


def test_a_word_of_capitalised_words_names_a_file_by_its_initials():
    hub = abbreviations.initials("pushing and loading models from HuggingFace Hub")
    assert hub == {("huggingface", "hf")}
    words = frozenset({"pushing", "loading", "models", "huggingface", "hub"})
    assert file_roles.path_words("model2vec/persistence/hf.py", words, hub) == 1
    assert file_roles.path_words("model2vec/persistence/hf.py", words) == 0
    script = abbreviations.initials("decode JavaScript values")
    assert file_roles.path_words("Core/JSValueDecoder.swift", frozenset({"javascript"}), script) == 1
    assert file_roles.path_words("Core/Decoder.swift", frozenset({"javascript"}), script) == 0
    # Only a whole word of two capitalised words or more: not part of a longer name, not an acronym, not one word.
    assert abbreviations.initials("getJavaScript, HTTPServer, Hub, OAuth2") == frozenset()


def test_two_words_run_together_in_lowercase_name_a_file_when_the_query_says_both():
    words = frozenset({"unix", "manual", "page", "output", "troff", "format"})
    assert file_roles.path_words("docutils/writers/manpage.py", words) == 2  # man (manual's start), page
    templates = frozenset({"functions", "available", "log", "output", "templates"})
    assert file_roles.path_words("mercurial/templatefuncs.py", templates) == 2  # template, funcs (a short form)
    assert file_roles.path_words("site/docgen/md.md", frozenset({"documentation", "generation"})) == 2  # the folder
    # One word of the query says neither piece alone: the rest of the name is not a word it says.
    assert file_roles.path_words("mercurial/simplemerge.py", frozenset({"merge", "text"})) == 0
    assert file_roles.path_words("mercurial/templatekw.py", templates) == 0
    assert file_roles.path_words("lib/pagemanager.py", frozenset({"page"})) == 1  # its start, as before


# A command-line library's folder is named for it, and so is one small file of its settings; the flags live in
# the command's file.
CLI = {
    "command.go": 'package cobra\n\nimport flag "github.com/spf13/pflag"\n\n'
    "// Flags returns the FlagSet of this command: pflag's typed flag values, parsed from its arguments.\n"
    "func (c *Command) Flags() *flag.FlagSet {\n\tif c.flags == nil {\n"
    "\t\tc.flags = flag.NewFlagSet(c.Name(), flag.ContinueOnError)\n\t}\n\treturn c.flags\n}\n\n"
    "// PersistentFlags returns the flags a command's children inherit.\n"
    "func (c *Command) PersistentFlags() *flag.FlagSet {\n\treturn c.pflags\n}\n",
    "cobra.go": "package cobra\n\n"
    "// AddTemplateFunc adds a function for the usage and help templates of cobra commands.\n"
    "func AddTemplateFunc(name string, fn interface{}) {\n\ttemplateFuncs[name] = fn\n}\n\n"
    "// EnablePrefixMatching lets cobra match a command by the start of its name (a flag of the whole program).\n"
    "var EnablePrefixMatching = false\n",
}


def test_the_project_s_own_name_in_a_question_names_no_file(tmp_path, monkeypatch):
    """A question that says the project's name ("how cobra integrates pflags") says it of all its code:
    ``cobra.go``, whose name it is, is not the place for that."""
    root = make_project(tmp_path / "cobra", CLI, None)
    query = "how cobra integrates pflags for typed flag values"
    assert files(root, query)[0] == "command.go"
    monkeypatch.setattr(file_roles, "project_words", lambda name: frozenset())
    assert files(root, query)[0] == "cobra.go"


def test_the_words_a_project_goes_by_come_from_its_folder_s_name():
    assert file_roles.project_words("cobra") == {"cobra"}
    assert file_roles.project_words("django-4.2") == {"django", "django42"}  # a version after the name
    assert file_roles.project_words("commons-lang") == {"commonslang"}  # as one word, not "lang" alone
    assert file_roles.project_words("v2") == frozenset()  # too short to be a name


# A library's test client, in a module named for it, and the tests of it, which say the question's words more often.
TEST_CLIENT = {
    "src/web/test.py": "class Client:\n"
    '    """The test client: drives an application without a server, keeps cookies between requests."""\n\n'
    "    def open(self, path):\n        response = self.application.run(path, cookies=self.cookie_jar)\n"
    "        self.cookie_jar.update(response.cookies)\n        return response\n",
    "tests/test_client.py": "from web.test import Client\n\n\n"
    "def test_client_keeps_cookies():\n    client = Client(app)\n    client.open('/set-cookie')\n"
    "    # the test client keeps cookies between requests\n"
    "    assert client.open('/cookies').cookies == client.cookie_jar\n",
}


def test_a_word_of_tests_that_says_what_a_thing_is_for_asks_for_no_tests(tmp_path, monkeypatch):
    """A library's test client is its code (werkzeug's ``test.py``); "tests for the client" asks for tests. When any
    word of tests asked for them, the tests came first for both."""
    root = make_project(tmp_path / "web", TEST_CLIENT, None)
    assert files(root, "how does the test client keep cookies between requests")[0] == "src/web/test.py"
    assert files(root, "tests for the client keeping cookies")[0] == "tests/test_client.py"
    monkeypatch.setattr(wants, "_asks_for", lambda words, kind: bool(set(words) & kind))
    assert files(root, "how does the test client keep cookies between requests")[0] == "tests/test_client.py"


@pytest.mark.parametrize(
    ("query", "tests", "docs"),
    [
        ("tests for bulk_create", True, False),
        ("which test checks that a variable already set is kept", True, False),
        ("override_settings decorator or context manager in tests", True, False),
        ("unit testing", True, False),
        ("how does the test client keep cookies", False, False),
        ("WSGI spec compliance warnings", False, False),
        ("mock server for HTTP requests", False, False),
        ("examples of middleware", False, True),
        ("where is the documentation", False, True),
        ("README", False, True),
        ("documentation generation for man pages and markdown", False, False),
    ],
)  # fmt: skip
def test_a_word_of_tests_or_docs_asks_for_them_as_the_thing_sought(query, tests, docs):
    asked = Wants.of(query, Filters())
    assert (asked.tests, asked.docs) == (tests, docs)


# A documentation package's program, which writes man pages, beside the site's page about it.
DOC_PACKAGE = {
    "doc/man_docs.go": "package doc\n\n// GenManTree writes a man page for the command and each of its children.\n"
    "func GenManTree(cmd *Command, dir string) error {\n\treturn genMan(cmd, dir, manHeader(cmd))\n}\n",
    "site/docgen/man.md": "# Generating man pages\n\nDocumentation generation for man pages: call GenManTree\n"
    "with the root command to write man pages for the command tree.\n",
    "command.go": "package cobra\n\n// Command is one command of the tree.\ntype Command struct {\n\tUse string\n}\n",
}


def test_a_program_in_a_documentation_folder_is_code(tmp_path):
    """Cobra's ``doc/`` package is code that writes documentation, not documentation."""
    root = make_project(tmp_path / "cobra", DOC_PACKAGE, None)
    assert files(root, "documentation generation for man pages")[0] == "doc/man_docs.go"
    assert not file_roles.is_doc("doc/man_docs.go", "go")
    assert not file_roles.is_doc("docs/conf.py", "python")
    assert file_roles.is_doc("docs/index.html", "html")
    assert file_roles.is_doc("docs/guide.md", "markdown")
    assert file_roles.is_doc("examples/basic.py", "python")  # an example's program is documentation


def test_rust_s_module_of_tests_is_a_test():
    assert file_roles.is_test("src/iter/test.rs")
    assert file_roles.is_test("src/tests.rs")
    assert not file_roles.is_test("src/contest.rs")
    assert not file_roles.is_test("src/web/test.py")  # Python's may be a library's test client
