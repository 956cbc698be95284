"""Several repositories in one search: real indexes of three small projects in three languages, two embedding
models, through the library, the pack, the CLI and the MCP server."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import build_index, compact_rows
from openai_server import EmbeddingsServer
from test_mcp_server import talk, text

from onetool_code import api, cli, pack, settings
from onetool_code.answer import formatting
from onetool_code.answer.formatting import INDENT

BILLING = {
    "billing/invoices.py": '''"""Invoices and what they cost."""


def charge_invoice(invoice_id: int, amount: float) -> str:
    """Charge the customer for an invoice and return the receipt number."""
    receipt = f"R-{invoice_id}"
    return receipt


def refund_invoice(invoice_id: int) -> None:
    """Give the money of an invoice back."""
    print("refunded", invoice_id)
''',
    "billing/tax.py": '''def tax_rate(country: str) -> float:
    """The value added tax of a country."""
    return 0.2 if country == "FR" else 0.1
''',
}
STOREFRONT = {
    "src/cart.ts": """export interface CartItem {
  sku: string;
  quantity: number;
}

export function renderCart(items: CartItem[]): string {
  return items.map((item) => `${item.sku} x${item.quantity}`).join("\\n");
}

export function cartTotal(items: CartItem[], prices: Map<string, number>): number {
  return items.reduce((sum, item) => sum + (prices.get(item.sku) ?? 0) * item.quantity, 0);
}
""",
}
GATEWAY = {
    "router/route.go": """package router

import "net/http"

// RouteRequest sends a request to the service that owns its path.
func RouteRequest(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}

// RateLimit refuses a client that asks too often.
func RateLimit(next http.Handler) http.Handler {
	return next
}
""",
}
OTHER_MODEL = "local-code-model"  # the gateway's index is built with it (.chunkhound.json), the others with the default


@dataclass(frozen=True)
class Workspace:
    roots: tuple[Path, ...]  # billing, storefront, gateway
    base_url: str

    @property
    def paths(self) -> list[str]:
        return [str(root) for root in self.roots]


def _project(base: Path, name: str, files: dict[str, str], config: dict | None = None) -> Path:
    root = base / name
    for relative, source in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(source)
    if config is not None:
        (root / ".chunkhound.json").write_text(json.dumps(config))
    return root


@pytest.fixture(scope="module")
def repos(server: EmbeddingsServer, tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Three indexed projects: Python, TypeScript and Go; the Go one indexed with another model."""
    base = tmp_path_factory.mktemp("workspace")
    roots = (
        _project(base, "billing", BILLING),
        _project(base, "storefront", STOREFRONT),
        _project(base, "gateway", GATEWAY, {"embedding": {"model": OTHER_MODEL}}),
    )
    for root in roots:
        build_index(root, server.base_url)
    return Workspace(roots, server.base_url)


def _search(repos: Workspace, query: str, **options: object) -> object:
    return api.search(query=query, path=repos.paths, base_url=repos.base_url, **options)


def test_one_embeddings_request_per_distinct_model(repos, server):
    """Billing and storefront share the default model: one request; the gateway's model: another."""
    before = len(server.embedding_requests())
    answer = _search(repos, "charge the customer for an invoice")
    asked = server.embedding_requests()[before:]
    assert sorted(r.body["model"] for r in asked) == [OTHER_MODEL, "text-embedding-3-small"]
    assert all(r.body["input"] == ["charge the customer for an invoice"] for r in asked)
    assert answer.startswith("Found ")


def test_a_batch_sends_all_its_queries_in_one_request_per_model(repos, server):
    before = len(server.embedding_requests())
    answer = api.search_batch(queries="render the cart|route a request", path=repos.paths, base_url=repos.base_url)
    asked = server.embedding_requests()[before:]
    assert len(asked) == 2
    assert all(r.body["input"] == ["render the cart", "route a request"] for r in asked)
    assert "storefront:src/cart.ts" in answer and "gateway:router/route.go" in answer


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("charge_invoice", "billing:billing/invoices.py"),
        ("renderCart", "storefront:src/cart.ts"),
        ("RouteRequest", "gateway:router/route.go"),
    ],
)
def test_the_repository_whose_definition_the_query_names_comes_first(repos, query, first):
    best = _search(repos, query, format="json")["results"][0]
    assert f"{best['repository']}:{best['file_path']}" == first
    assert best["name"] == query


LEDGER = {
    "ledger/amounts.py": '''from decimal import Decimal


def parse_amount(line: str) -> Decimal:
    """Parse the decimal amount at the end of a ledger line."""
    return Decimal(line.rsplit(" ", 1)[-1])
''',
}
# Each of these holds one or two of the question's words as written, none all of them.
SITE = {
    "src/query.ts": "// Parsing of the page's query string.\nexport function readQuery(url: string): string {\n"
    "  return url.split('?')[1] ?? '';\n}\n",
    "src/price.ts": "// Decimal places shown for a price.\nexport function priceText(cents: number): string {\n"
    "  return (cents / 100).toFixed(2);\n}\n",
    "src/report.ts": "// Amounts of the ledger page, summed.\nexport function reportTotal(rows: number[]): number {\n"
    "  return rows.reduce((a, b) => a + b, 0);\n}\n",
    "src/wrap.ts": "// Lines of a paragraph, wrapped at a width.\nexport function wrapText(text: string): string[] {\n"
    "  return text.split('\\n');\n}\n",
}


def test_a_question_goes_to_the_repository_one_of_whose_results_says_it(server, tmp_path):
    """The repository whose one function says the question (by stems: "parsing" is ``parse``, "lines" ``line``)
    comes first, not the one whose results together hold every word as written, one or two each."""
    roots = (_project(tmp_path, "ledger", LEDGER), _project(tmp_path, "site", SITE))
    for root in roots:
        build_index(root, server.base_url)
    answer = _search(Workspace(roots, server.base_url), "parsing decimal amounts from ledger lines", format="json")
    first = answer["results"][0]
    assert (first["repository"], first["file_path"]) == ("ledger", "ledger/amounts.py")
    alone = {
        r["file_path"]
        for r in api.search(
            query="parsing decimal amounts", path=str(roots[1]), format="json", base_url=server.base_url
        )["results"]
    }
    assert {"src/query.ts", "src/price.ts", "src/report.ts"} <= alone  # the site answers with its words alone


# A library of schemas, whose code says "schema", "optional" and "nullable" throughout ...
SCHEMAS = {
    "lib/optional.ts": "import { Schema } from './schema';\n\n"
    "// A schema that also lets undefined through.\nexport class OptionalSchema<T> extends Schema<T | undefined> {\n"
    "  constructor(readonly inner: Schema<T>) { super(); }\n"
    "  parse(value: unknown) { return value === undefined ? undefined : this.inner.parse(value); }\n}\n",
    "lib/nullable.ts": "import { Schema } from './schema';\n\n"
    "// A schema that also lets null through.\nexport class NullableSchema<T> extends Schema<T | null> {\n"
    "  constructor(readonly inner: Schema<T>) { super(); }\n"
    "  parse(value: unknown) { return value === null ? null : this.inner.parse(value); }\n}\n",
    "lib/schema.ts": "// The base of every schema: optional() and nullable() wrap it.\nexport abstract class Schema<T> {\n"
    "  abstract parse(value: unknown): T;\n  optional() { return makeOptional(this); }\n"
    "  nullable() { return makeNullable(this); }\n}\n",
    "lib/object.ts": "import { Schema } from './schema';\n\n"
    "// An object schema: each key's schema, optional keys left out when undefined.\n"
    "export function objectSchema(shape: Record<string, Schema<unknown>>) {\n  return shape;\n}\n",
}
# ... and an HTTP adapter, one of whose functions says the question's words once, in a chunk of its own.
ADAPTER = {
    "adapter/optional_fields.ts": "// Optional and nullable schema fields of a request pass as given.\n"
    "export function passFields(fields: Record<string, string>): Record<string, string> {\n"
    "  return { ...fields };\n}\n",
    "adapter/server.ts": "import { createServer } from 'node:http';\n\n"
    "// Starts the HTTP server on a port.\nexport function listen(port: number) {\n"
    "  return createServer().listen(port);\n}\n",
    "adapter/headers.ts": "// Reads a header of the incoming message.\n"
    "export function header(headers: Record<string, string>, name: string): string | undefined {\n"
    "  return headers[name.toLowerCase()];\n}\n",
    "adapter/body.ts": "// Collects the body of a message into one string.\nexport async function body(chunks: string[]) {\n"
    "  return chunks.join('');\n}\n",
}


OPTIONAL_FIELDS = "adapter:adapter/optional_fields.ts"


@pytest.mark.parametrize("cache", [True, False])
def test_a_question_goes_to_the_repository_whose_code_is_about_its_words(server, tmp_path, cache):
    """Each repository has a result that says the whole question: the library's files, whose code says its words
    throughout, come before the adapter's one file that says them once (and is named for one of them). From
    snapshots, or from the index files (``cache`` off)."""
    roots = (_project(tmp_path, "schemas", SCHEMAS), _project(tmp_path, "adapter", ADAPTER))
    for root in roots:
        build_index(root, server.base_url)
    query = "optional nullable schema"
    answer = _search(Workspace(roots, server.base_url), query, format="json", cache=cache)
    files = list(dict.fromkeys(f"{r['repository']}:{r['file_path']}" for r in answer["results"]))
    assert files[:4] == ["schemas:lib/nullable.ts", "schemas:lib/schema.ts", "schemas:lib/optional.ts", OPTIONAL_FIELDS]
    alone = api.search(query=query, path=str(roots[1]), format="json", base_url=server.base_url)["results"]
    assert f"adapter:{alone[0]['file_path']}" == OPTIONAL_FIELDS  # the adapter's own answer says it all


def test_every_hit_names_its_repository(repos):
    answer = _search(repos, "function that returns a value", format="json", limit=20)
    assert answer["count"] > 3
    assert {r["repository"] for r in answer["results"]} == {"billing", "storefront", "gateway"}
    compact = _search(repos, "function that returns a value", format="compact", limit=20)
    assert [where.split(":")[0] for where, *_ in compact_rows(compact)] == [r["repository"] for r in answer["results"]]
    text = _search(repos, "function that returns a value", limit=20, content="never")
    places = [line for line in text.split("\n")[1:] if not line.startswith(INDENT)]
    labelled = [line.split(". ", 1)[1] if line[0].isdigit() else line for line in places]
    grouped = [line for line in labelled if line.startswith(":")]  # a result under its file's line
    assert len(places) > 3 and grouped
    assert all(line.split(":")[0] in {"billing", "storefront", "gateway"} for line in labelled if line not in grouped)


@pytest.mark.parametrize("max_bytes", [500, 900, 2000])
@pytest.mark.parametrize("fmt", ["text", "json", "compact"])
def test_one_byte_budget_for_the_whole_answer(repos, max_bytes, fmt):
    answer = _search(repos, "invoice cart request", limit=30, content="always", format=fmt, max_bytes=max_bytes)
    assert len(formatting.as_text(answer).encode("utf-8")) <= max_bytes


def test_a_repository_that_fails_costs_a_note(repos, tmp_path):
    """A project that is not indexed is named in one note; the others answer."""
    unindexed = _project(tmp_path, "notes", {"todo.py": "def later():\n    pass\n"})
    answer = api.search(query="charge_invoice", path=[*repos.paths, str(unindexed)], base_url=repos.base_url)
    lines = answer.split("\n")
    assert lines[1] == "Note: notes: not searched: Project not indexed."
    assert lines[2:4] == ["billing:billing/invoices.py", "1. :4-7 function charge_invoice (3.60)"]


def test_every_repository_failing_is_an_error(tmp_path):
    first = _project(tmp_path, "one", {"a.py": "x = 1\n"})
    second = _project(tmp_path, "two", {"b.py": "y = 2\n"})
    answer = api.search(query="value", path=[str(first), str(second)], mode="lexical")
    assert answer.startswith("Error: no repository of the workspace could answer (2): one: Project not indexed. Run:")
    assert f" | two: Project not indexed. Run: chunkhound index {second} " in answer


def test_a_deleted_index_is_a_note_and_the_others_answer(repos, tmp_path):
    gone = tmp_path / "gateway"
    shutil.copytree(repos.roots[2], gone)
    shutil.rmtree(gone / ".chunkhound")
    answer = api.search(query="charge_invoice", path=[repos.paths[0], str(gone)], base_url=repos.base_url)
    assert answer.split("\n")[1] == "Note: gateway: not searched: Project not indexed."
    assert "billing:billing/invoices.py\n1. :4-7 function charge_invoice" in answer


def test_one_path_in_a_list_answers_as_the_path(repos):
    one = repos.paths[0]
    for fmt in ("text", "json"):
        assert api.search(query="invoice", path=[one], base_url=repos.base_url, format=fmt) == api.search(
            query="invoice", path=one, base_url=repos.base_url, format=fmt
        )


def test_two_folders_of_one_name_get_two_labels(repos, tmp_path):
    twin = tmp_path / "billing"
    shutil.copytree(repos.roots[0], twin)
    answer = _search(Workspace((repos.roots[0], twin), repos.base_url), "charge_invoice", format="json")
    assert {r["repository"] for r in answer["results"]} == {"billing", "billing-2"}
    assert settings.labels(["api", "api", "api-2", "web"]) == ["api", "api-2", "api-2-2", "web"]


def test_pages_follow_one_another(repos):
    first = _search(repos, "invoice cart request", format="json", limit=3, mode="lexical")
    second = _search(repos, "invoice cart request", format="json", limit=3, offset=3, mode="lexical")
    assert first["next_offset"] == 3
    seen = {(r["repository"], r["file_path"], r["start_line"]) for r in first["results"]}
    assert not seen & {(r["repository"], r["file_path"], r["start_line"]) for r in second["results"]}


def test_status_reports_each_repository(repos, tmp_path):
    unindexed = _project(tmp_path, "notes", {"todo.py": "def later():\n    pass\n"})
    paths = [*repos.paths, str(unindexed)]
    text = api.status(path=paths, base_url=repos.base_url)
    blocks = text.split("\n\n")
    assert [b.split("\n")[0] for b in blocks] == [
        "Repository: billing",
        "Repository: storefront",
        "Repository: gateway",
        "Repository: notes",
    ]
    assert blocks[2].split("\n")[1] == f"Project: {repos.roots[2]}"
    assert blocks[3].split("\n")[1].startswith(f"Error: Project not indexed. Run: chunkhound index {unindexed} ")
    data = api.status(path=paths, base_url=repos.base_url, format="json")
    assert [d["repository"] for d in data] == ["billing", "storefront", "gateway", "notes"]
    assert data[2]["configured_model"] == f"openai/{OTHER_MODEL}"
    assert data[3]["error"].startswith("Project not indexed.")


def test_the_cli_takes_path_repeated(repos, capsys):
    args = ["search", "RouteRequest", "--base-url", repos.base_url, "--content", "never"]
    code = cli.main([*args, *(a for p in repos.paths for a in ("--path", p))])
    out = capsys.readouterr().out
    assert code == 0
    assert out.split("\n")[1:3] == ["gateway:router/route.go", "1. :6-13 function RouteRequest (3.60)"]
    assert out == api.search(query="RouteRequest", path=repos.paths, base_url=repos.base_url, content="never") + "\n"


def test_a_bad_path_list_is_bad_input():
    assert api.search(query="x", path=["a", 3]).startswith("Error: path must be a project root, or a list")


def test_the_pack_searches_a_workspace_as_the_library(repos, monkeypatch):
    """The pack has no base_url argument (a user's setting): the environment names the test server."""
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", repos.base_url)
    for query in ("charge_invoice", "renderCart"):
        assert pack.search(query=query, path=repos.paths) == api.search(query=query, path=repos.paths)
    assert pack.search_batch(queries="tax|route", path=repos.paths) == api.search_batch(
        queries="tax|route", path=repos.paths
    )
    assert pack.status(path=repos.paths).split("\n")[0] == "Repository: billing"


def test_the_mcp_server_serves_a_workspace(repos, tmp_path):
    """Started with --path repeated, its search answers over the workspace by default, and a call may name
    the roots itself."""

    async def scenario(session):
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        default = await session.call_tool("search", {"query": "RouteRequest", "content": "never"})
        named = await session.call_tool("search", {"query": "renderCart", "path": repos.paths[:2], "format": "json"})
        status = await session.call_tool("status", {})
        return listed["search"].inputSchema["properties"]["path"], text(default), json.loads(text(named)), text(status)

    args = [a for p in repos.paths for a in ("--path", p)] + ["--base-url", repos.base_url]
    schema, default, named, status = talk(tmp_path, args, scenario)
    assert {"type": "string"} in schema["anyOf"]
    assert default == api.search(query="RouteRequest", path=repos.paths, base_url=repos.base_url, content="never")
    assert named["results"][0]["repository"] == "storefront"
    assert {r["repository"] for r in named["results"]} <= {"billing", "storefront"}
    assert [line for line in status.split("\n") if line.startswith("Repository: ")] == [
        "Repository: billing",
        "Repository: storefront",
        "Repository: gateway",
    ]


def test_a_workspace_of_onetools_config_is_named_with_an_at(repos):
    host = settings.OneToolHost(
        get_secret=lambda name: None,
        tool_config={"workspaces": {"shop": repos.paths[:2]}, "base_url": repos.base_url},
    )
    named = api.search(query="renderCart", path="@shop", host=host, format="json")
    listed = api.search(query="renderCart", path=repos.paths[:2], base_url=repos.base_url, format="json")
    assert named == listed
    mixed = api.search(query="RouteRequest", path=["@shop", repos.paths[2]], host=host, format="json")
    assert mixed["results"][0]["repository"] == "gateway"
    assert api.search(query="x", path="@nope", host=host) == "Error: unknown workspace @nope; configured: @shop"


def test_the_cli_reads_a_workspace_file(repos, tmp_path, capsys):
    """YAML names workspaces (relative roots are the file's); a list is the default path."""
    named = tmp_path / "workspaces.yaml"
    named.write_text(f"shop:\n  - {repos.paths[0]}\n  - {repos.paths[1]}\nall: {json.dumps(repos.paths)}\n")
    listed = repos.roots[0].parent / "workspace.json"
    listed.write_text(json.dumps(["billing", "gateway"]))
    base = ["--base-url", repos.base_url, "--format", "json"]
    assert cli.main(["search", "render the cart", "--workspace", str(named), "--path", "@shop", *base]) == 0
    shop = json.loads(capsys.readouterr().out)
    assert {r["repository"] for r in shop["results"]} == {"billing", "storefront"}
    assert cli.main(["status", "--workspace", str(listed), *base]) == 0
    assert [s["repository"] for s in json.loads(capsys.readouterr().out)] == ["billing", "gateway"]
    assert cli.main(["search", "tax", "--workspace", str(named), *base]) == 2
    assert capsys.readouterr().err == (
        f"Error: {named} names several workspaces: choose one with --path @NAME (shop, all)\n"
    )


@pytest.mark.chunkhound
def test_a_real_chunkhound_index_held_by_a_writer_is_one_member(chunkhound, chunkhound_project, repos):
    """ChunkHound 6.1.0's own index of the sample project beside two of ours: while a writer holds it, a
    search reads it through a private copy; with snapshots off it cannot be read, and costs a note."""
    paths = [str(chunkhound_project.root), repos.paths[0], repos.paths[2]]
    before = chunkhound_project.digest()
    with chunkhound.hold_write_lock(chunkhound_project.db):
        held = api.search(query="retry", path=paths, base_url=repos.base_url, format="json", limit=20)
        off = api.search(query="charge_invoice", path=paths, base_url=repos.base_url, cache=False)
    assert "notice" not in held
    assert held["results"][0]["repository"] == "project"
    assert off.split("\n")[1].startswith("Note: project: not searched: ")
    assert "billing:billing/invoices.py\n1. :4-7 function charge_invoice" in off
    assert chunkhound_project.digest() == before


@pytest.mark.onetool
def test_onetool_searches_a_workspace_of_its_config_and_a_list(repos, tmp_path, monkeypatch):
    """Through the real OneTool: ``path="@shop"`` from ``tools.code.workspaces``, and a list written in the
    call, each exactly the library's answer; ``path="@one"``, a workspace of one root, is that root for
    ``related`` too, though the current directory holds a folder called ``@one`` (issue 32, item 2)."""
    from tooling.onetool_env import ensure_onetool

    (tmp_path / "@one").mkdir()
    config = {"base_url": repos.base_url, "workspaces": {"shop": repos.paths[:2], "one": [repos.paths[2]]}}
    with ensure_onetool(Path(__file__).resolve().parents[2]).serve(
        tmp_path, tools_dir=[Path(pack.__file__)], tool_config=config, env={"OT_CWD": str(tmp_path)}
    ) as client:
        named = client.run('code.search(query="renderCart", path="@shop")').body
        listed = client.run(f'code.search(query="RouteRequest", path={json.dumps(repos.paths)})').body
        one = client.run('code.related(file="router/route.go", line=6, path="@one")').body
    assert named == api.search(query="renderCart", path=repos.paths[:2], base_url=repos.base_url)
    assert listed == api.search(query="RouteRequest", path=repos.paths, base_url=repos.base_url)
    assert "storefront:src/cart.ts" in named and "gateway:router/route.go" in listed
    assert one == api.related(file="router/route.go", line=6, path=repos.paths[2], base_url=repos.base_url)


def test_a_page_cut_by_the_budget_names_an_offset_that_skips_nothing(repos):
    """The next offset is the fused place of the first result left out, whatever the order of files shown."""
    whole = _search(repos, "invoice cart request", format="json", limit=12, mode="lexical", content="never")
    cut = _search(repos, "invoice cart request", format="json", limit=12, mode="lexical", max_bytes=900)
    shown = [(r["repository"], r["file_path"], r["start_line"]) for r in cut["results"]]
    assert "left_out" in cut and len(shown) < len(whole["results"])
    rest = _search(repos, "invoice cart request", format="json", mode="lexical", offset=cut["next_offset"], limit=30)
    again = shown + [(r["repository"], r["file_path"], r["start_line"]) for r in rest["results"]]
    assert {(r["repository"], r["file_path"], r["start_line"]) for r in whole["results"]} <= set(again)


def test_each_repository_answers_from_its_own_index_as_it_is_now(repos, server, tmp_path):
    """A repository re-indexed between two workspace searches is searched as it is now; the others are read
    from their snapshots as before (issue 26, item 3)."""
    billing = _project(tmp_path, "billing", BILLING)
    build_index(billing, server.base_url)
    paths = [str(billing), repos.paths[1]]
    query = "issue_credit_note"
    before = api.search(query=query, path=paths, base_url=repos.base_url, format="json", mode="lexical")
    assert query not in {r["name"] for r in before["results"]}
    (billing / "billing" / "credit.py").write_text('def issue_credit_note(invoice_id: int) -> str:\n    return "C"\n')
    build_index(billing, server.base_url)
    after = api.search(query=query, path=paths, base_url=repos.base_url, format="json", mode="lexical")
    best = after["results"][0]
    assert (best["repository"], best["file_path"], best["name"]) == ("billing", "billing/credit.py", query)


def test_one_note_names_every_repository_it_is_about(repos, tmp_path):
    first = _project(tmp_path, "notes", {"todo.py": "def later():\n    pass\n"})
    second = _project(tmp_path, "drafts", {"draft.py": "def sketch():\n    pass\n"})
    answer = api.search(query="charge_invoice", path=[str(first), repos.paths[0], str(second)], mode="lexical")
    assert answer.split("\n")[1] == "Note: notes, drafts: not searched: Project not indexed."


def test_each_repository_keeps_its_key_zone(repos, server, tmp_path, monkeypatch):
    """One model, two zones: the user's repository sends the user's key to the server the user named; the one
    whose own .chunkhound.json names another server gets no key of the user's (a URL the user also named would
    be the user's: it would get the key, and share the request)."""
    key = "sk-user-workspace-key"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("CHUNKHOUND_EMBEDDING__BASE_URL", server.base_url)
    theirs = tmp_path / "storefront"
    shutil.copytree(repos.roots[1], theirs)
    (theirs / ".chunkhound.json").write_text(json.dumps({"embedding": {"base_url": server.url("project")}}))
    before = len(server.embedding_requests())
    answer = api.search(query="render the cart", path=[repos.paths[0], str(theirs)], mode="semantic")
    assert answer.startswith("Found ")
    asked = [(r.path, r.authorization) for r in server.embedding_requests()[before:]]
    assert asked == [("/v1/embeddings", f"Bearer {key}"), ("/project/v1/embeddings", "Bearer not-needed")]


def test_an_edit_in_one_repository_answers_in_a_workspace_search_and_the_other_is_untouched(server, tmp_path):
    """The checkout over its index, per repository: searched twice first (a long-lived process watches by then),
    then an edit in billing is found by the very next search, with no sleep; storefront answers as before."""
    roots = (_project(tmp_path, "billing", BILLING), _project(tmp_path, "storefront", STOREFRONT))
    for root in roots:
        build_index(root, server.base_url)
    paths = [str(root) for root in roots]

    def search(query: str) -> dict:
        return api.search(query=query, path=paths, base_url=server.base_url, format="json", limit=20)

    before = [search("cart total of the items"), search("cart total of the items")]
    assert before[0] == before[1]
    invoices = roots[0] / "billing" / "invoices.py"
    invoices.write_text(invoices.read_text() + "\n\ndef void_invoice(invoice_id: int) -> bool:\n    return True\n")

    found = search("void_invoice")
    best = found["results"][0]
    assert (best["repository"], best["file_path"], best["name"]) == ("billing", "billing/invoices.py", "void_invoice")
    assert "1 files changed" in (found["notice"] or "")
    after = search("cart total of the items")
    storefront = [r for r in after["results"] if r["repository"] == "storefront"]
    assert storefront == [r for r in before[0]["results"] if r["repository"] == "storefront"]
