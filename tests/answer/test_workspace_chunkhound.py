"""A workspace of five real ChunkHound 6.1.0 indexes (issue 26): five languages, three embedding models at three
dimensions, one query answered from the right repository first, each hit labelled, in one budget, through the
library, the CLI, the pack (the real OneTool) and the MCP server, while ChunkHound re-indexes or holds one of
them."""

from __future__ import annotations

import itertools
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from conftest import read_compact, settled
from openai_server import EmbeddingsServer
from test_chunkhound import _found_by_chunkhound, chunkhound_mcp
from test_mcp_server import talk, text
from test_workspace import _project

from onetool_code import api, cli, index, pack
from onetool_code.answer import formatting
from onetool_code.index import holders

pytestmark = pytest.mark.chunkhound

LEDGER = {
    "ledger/journal.py": '''"""The journal: entries posted to accounts, and the balance they leave."""

from dataclasses import dataclass


@dataclass
class JournalEntry:
    account: str
    amount_cents: int


def post_journal_entry(entries: list[JournalEntry], account: str, amount_cents: int) -> JournalEntry:
    """Append an entry to the journal and return it."""
    entry = JournalEntry(account, amount_cents)
    entries.append(entry)
    return entry


def reconcile_ledger(entries: list[JournalEntry], statement: dict[str, int]) -> list[str]:
    """The accounts whose posted total differs from the bank statement."""
    totals: dict[str, int] = {}
    for entry in entries:
        totals[entry.account] = totals.get(entry.account, 0) + entry.amount_cents
    return sorted(account for account in statement if totals.get(account, 0) != statement[account])
''',
    "ledger/money.py": '''def format_cents(amount_cents: int) -> str:
    """Cents as a price with two decimals."""
    return f"{amount_cents // 100}.{amount_cents % 100:02d}"
''',
}
STOREFRONT = {
    "src/checkout.ts": """export interface LineItem {
  sku: string;
  quantity: number;
  priceCents: number;
}

export function renderCheckoutSummary(items: LineItem[]): string {
  const lines = items.map((item) => `${item.sku} x${item.quantity}`);
  return lines.join("\\n");
}

export function applyCouponCode(totalCents: number, code: string): number {
  return code === "HALF" ? Math.round(totalCents / 2) : totalCents;
}
""",
    "src/search.ts": """export function highlightQueryTerms(text: string, terms: string[]): string {
  return terms.reduce((out, term) => out.split(term).join(`<mark>${term}</mark>`), text);
}
""",
}
GATEWAY = {
    "proxy/throttle.go": """package proxy

import "time"

// TokenBucket holds the tokens a client may still spend.
type TokenBucket struct {
	Tokens   int
	Refilled time.Time
}

// ThrottleClient refuses a client whose bucket is empty.
func ThrottleClient(bucket *TokenBucket) bool {
	if bucket.Tokens == 0 {
		return false
	}
	bucket.Tokens--
	return true
}
""",
    "proxy/forward.go": """package proxy

import "net/http"

// ForwardUpstream sends a request on to the service behind the gateway.
func ForwardUpstream(client *http.Client, request *http.Request) (*http.Response, error) {
	return client.Do(request)
}
""",
}
TELEMETRY = {
    "src/metrics.rs": """use std::collections::HashMap;

/// Records how long each span took.
pub struct SpanRecorder {
    durations: HashMap<String, u64>,
}

impl SpanRecorder {
    pub fn record_span(&mut self, name: &str, micros: u64) {
        self.durations.insert(name.to_string(), micros);
    }
}

/// Empties the buffer of metrics, returning how many were sent.
pub fn flush_metrics_buffer(buffer: &mut Vec<u64>) -> usize {
    let sent = buffer.len();
    buffer.clear();
    sent
}
""",
    "src/sampling.rs": """/// The share of traces kept.
pub fn sample_rate(per_thousand: u32) -> f64 {
    f64::from(per_thousand) / 1000.0
}
""",
}
INVENTORY = {
    "src/main/java/com/example/inventory/StockReservation.java": """package com.example.inventory;

import java.util.HashMap;
import java.util.Map;

/** Units of stock held for orders that are not paid yet. */
public class StockReservation {
    private final Map<String, Integer> held = new HashMap<>();

    public boolean reserveWarehouseStock(String sku, int units, int available) {
        if (units > available) {
            return false;
        }
        held.merge(sku, units, Integer::sum);
        return true;
    }
}
""",
    "src/main/java/com/example/inventory/Warehouse.java": """package com.example.inventory;

/** A building that holds stock. */
public class Warehouse {
    public int releaseExpiredHolds(int expired) {
        return expired;
    }
}
""",
}
# Three models at three dimensions: ChunkHound's default for three repositories, another OpenAI model for the
# Rust one, a VoyageAI model (ChunkHound's voyageai SDK) for the Java one; each named by the project's own
# .chunkhound.json, which both ChunkHound and we read.
MODELS = {
    "ledger": ("openai", "text-embedding-3-small", 1536),
    "storefront": ("openai", "text-embedding-3-small", 1536),
    "gateway": ("openai", "text-embedding-3-small", 1536),
    "telemetry": ("openai", "text-embedding-3-large", 3072),
    "inventory": ("voyageai", "voyage-code-3", 1024),
}
SOURCES = {
    "ledger": LEDGER,
    "storefront": STOREFRONT,
    "gateway": GATEWAY,
    "telemetry": TELEMETRY,
    "inventory": INVENTORY,
}
# A query naming a definition, and where the first result must be.
FIRST = {
    "reconcile_ledger": "ledger:ledger/journal.py",
    "renderCheckoutSummary": "storefront:src/checkout.ts",
    "ThrottleClient": "gateway:proxy/throttle.go",
    "flush_metrics_buffer": "telemetry:src/metrics.rs",
    "reserveWarehouseStock": "inventory:src/main/java/com/example/inventory/StockReservation.java",
}


@dataclass(frozen=True)
class Five:
    roots: dict[str, Path]  # by label
    file: Path  # a workspace file: "five" (all of them) and "backend" (ledger and gateway)

    @property
    def paths(self) -> list[str]:
        return [str(root) for root in self.roots.values()]

    def db(self, label: str) -> Path:
        return self.roots[label] / ".chunkhound" / "db" / "chunks.db"


@pytest.fixture(scope="module")
def five(chunkhound, server: EmbeddingsServer, tmp_path_factory: pytest.TempPathFactory) -> Five:
    """The five projects, each indexed by ``chunkhound index`` with the model its ``.chunkhound.json`` names
    (about 3 s each, most of it ChunkHound starting: two at a time on two cores). ChunkHound refuses to reopen a
    copy, so tests that change one add files of their own."""
    base = tmp_path_factory.mktemp("five")
    roots = {}
    for label, (provider, model, _) in MODELS.items():
        key = "pa-test" if provider == "voyageai" else "test-key"
        embedding = {"provider": provider, "model": model, "base_url": server.base_url, "api_key": key}
        roots[label] = _project(base, label, SOURCES[label], {"embedding": embedding})
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda root: chunkhound.run(["index", str(root)], cwd=root), roots.values()))
    for root, run in zip(roots.values(), runs, strict=True):
        chunkhound._checked(run, f"chunkhound index {root.name}")
        settled(root / ".chunkhound" / "db" / "chunks.db")
    file = base / "workspaces.json"
    file.write_text(json.dumps({"five": list(roots), "backend": ["ledger", "gateway"]}))
    return Five(roots, file)


def _first(answer: dict) -> str:
    """The repository and file of a json answer's first result."""
    best = answer["results"][0]
    return f"{best['repository']}:{best['file_path']}"


def _first_in_text(answer: str) -> str:
    """The repository and file of a text answer's first result: the line of its file above its results, or its
    own line (``1. repo:path:lines ...``)."""
    line = next(line for line in answer.split("\n")[1:] if not line.startswith("Note: "))
    return ":".join(line.removeprefix("1. ").split(":")[:2])


def test_each_repository_was_indexed_by_chunkhound_with_its_own_model(five):
    status = api.status(path=five.paths, format="json")
    assert [s["repository"] for s in status] == list(MODELS)
    assert {s["repository"]: [(e["provider"], e["model"], e["dims"]) for e in s["embeddings"]] for s in status} == {
        label: [model] for label, model in MODELS.items()
    }
    assert all(s["configured_model_present"] and s["files"] == 2 for s in status), status


@pytest.mark.parametrize(("query", "first"), FIRST.items())
def test_the_library_answers_from_the_repository_whose_definition_the_query_names(five, server, query, first):
    """The right repository first. A name is looked for by words in all five, and found in one: the others do not
    fill the answer with what their words mean, and no embeddings request is made."""
    before = len(server.embedding_requests())
    answer = api.search(query=query, path=five.paths, format="json", limit=20)
    assert server.embedding_requests()[before:] == []
    assert _first(answer) == first and answer["results"][0]["name"].endswith(query)
    assert "notice" not in answer
    assert {r["repository"] for r in answer["results"]} == {first.split(":")[0]}


def test_a_name_no_repository_holds_is_looked_for_by_meaning(five, server):
    before = len(server.embedding_requests())
    answer = api.search(query="qxzv_unwritten", path=five.paths, format="json", limit=20)
    asked = sorted(r.body["model"] for r in server.embedding_requests()[before:])
    assert asked == sorted({model for _, model, _ in MODELS.values()})
    assert len({r["repository"] for r in answer["results"]}) == len(MODELS)


def test_a_question_over_the_five_asks_each_model_once(five, server):
    """One embeddings request per model: three for five repositories; each hit labelled with one of the five."""
    before = len(server.embedding_requests())
    answer = api.search(query="hold stock for an order", path=five.paths, format="json", limit=20)
    asked = sorted(r.body["model"] for r in server.embedding_requests()[before:])
    assert asked == sorted({model for _, model, _ in MODELS.values()})
    assert "notice" not in answer
    assert {r["repository"] for r in answer["results"]} <= set(MODELS)
    assert len({r["repository"] for r in answer["results"]}) >= 3


@pytest.mark.parametrize("fmt", ["text", "json", "compact"])
def test_one_byte_budget_for_the_five(five, fmt):
    """An answer over five repositories that would take more is cut to one budget, its first result kept."""
    whole = api.search(query="reserve warehouse stock", path=five.paths, limit=30, content="always", format="json")
    cut = api.search(query="reserve warehouse stock", path=five.paths, limit=30, content="always", format=fmt,
                     max_bytes=1200)  # fmt: skip
    assert len(formatting.as_text(cut).encode()) <= 1200 < len(formatting.as_text(whole).encode())
    assert len({r["repository"] for r in whole["results"]}) == 5
    if fmt == "text":
        assert _first_in_text(cut) == FIRST["reserveWarehouseStock"]
    else:
        rows = read_compact(cut) if fmt == "compact" else cut
        first = rows["results"][0]  # compact: the first file's name, its repository first
        assert (first["repository"] if fmt == "json" else first.split(":")[0]) == "inventory"


def test_the_cli_searches_a_workspace_file(five, capsys):
    """``--workspace FILE --path @five``: text whose every place names its repository, as the library's."""
    for query, first in FIRST.items():
        args = ["search", query, "--workspace", str(five.file), "--path", "@five", "--content", "never"]
        assert cli.main(args) == 0
        out = capsys.readouterr().out
        assert _first_in_text(out) == first and "Note: " not in out
        assert out == api.search(query=query, path=five.paths, content="never") + "\n"
    assert cli.main(["status", "--workspace", str(five.file), "--path", "@backend", "--format", "json"]) == 0
    assert [s["repository"] for s in json.loads(capsys.readouterr().out)] == ["ledger", "gateway"]


def test_the_pack_answers_as_the_library(five):
    for query in FIRST:
        assert pack.search(query=query, path=five.paths) == api.search(query=query, path=five.paths)


@pytest.mark.onetool
def test_onetool_searches_the_five_named_in_its_config(five, tmp_path):
    """Through the real OneTool: ``path="@five"`` from ``tools.code.workspaces``, exactly the library's answer."""
    from tooling.onetool_env import ensure_onetool

    config = {"workspaces": {"five": five.paths}}
    with ensure_onetool(Path(__file__).resolve().parents[2]).serve(
        tmp_path, tools_dir=[Path(pack.__file__)], tool_config=config, env={"OT_CWD": str(tmp_path)}
    ) as client:
        answers = {query: client.run(f'code.search(query="{query}", path="@five")').body for query in FIRST}
    for query, first in FIRST.items():
        assert answers[query] == api.search(query=query, path=five.paths)
        assert _first_in_text(answers[query]) == first and "Note: " not in answers[query]


def test_the_mcp_server_of_a_workspace_file_takes_a_workspace_by_name(five, tmp_path):
    """Started with ``--workspace FILE --path @five``: its default is the five; a call names ``@backend`` of the
    file; an unknown name is a tool error naming the known ones; the agent is told the names."""

    async def scenario(session):
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        default = {q: text(await session.call_tool("search", {"query": q, "content": "never"})) for q in FIRST}
        backend = await session.call_tool("search", {"query": "throttle client", "path": "@backend", "format": "json"})
        status = await session.call_tool("status", {"path": "@backend"})
        unknown = await session.call_tool("search", {"query": "x", "path": "@nope"})
        doc = listed["search"].inputSchema["properties"]["path"]["description"]
        return doc, default, json.loads(text(backend)), text(status), unknown

    doc, default, backend, status, unknown = talk(
        tmp_path, ["--workspace", str(five.file), "--path", "@five"], scenario
    )
    assert doc.endswith("; or a workspace by name: @five, @backend).")
    for query, first in FIRST.items():
        assert default[query] == api.search(query=query, path=five.paths, content="never")
        assert _first_in_text(default[query]) == first and "Note: " not in default[query]
    assert _first(backend) == FIRST["ThrottleClient"]
    assert {r["repository"] for r in backend["results"]} == {"ledger", "gateway"}
    assert [line for line in status.split("\n") if line.startswith("Repository: ")] == [
        "Repository: ledger",
        "Repository: gateway",
    ]
    assert unknown.isError and text(unknown) == "Error: unknown workspace @nope; configured: @five, @backend"


# -- beside ChunkHound writing one repository ------------------------------------------------------------------


def test_chunkhound_index_rewriting_one_repository_stops_none_of_the_five(chunkhound, five):
    """While ``chunkhound index`` holds the storefront's index read-write to add a file, every workspace search
    answers each query from its own repository first, the storefront's from its last snapshot; after, the new
    file is found."""
    root, db = five.roots["storefront"], five.db("storefront")
    api.search(query="renderCheckoutSummary", path=five.paths)  # every repository has a snapshot
    (root / "src" / "wishlist.ts").write_text(
        "export function moveToWishlist(sku: string): string {\n  return `wishlist:${sku}`;\n}\n"
    )
    done = []
    indexing = threading.Thread(target=lambda: done.append(chunkhound.run(["index", str(root)], cwd=root)))
    indexing.start()
    answers = []  # (whether ChunkHound held the index before and after the search, query, answer)
    for query in itertools.cycle(FIRST):
        if not indexing.is_alive():
            break
        before = holders.writer(db)
        answer = api.search(query=query, path=five.paths, format="json")
        answers.append((before is not None and holders.writer(db) is not None, query, answer))
    indexing.join()
    assert done[0].returncode == 0, done[0].stderr[-2000:]
    wrong = [(query, answer) for _, query, answer in answers if _first(answer) != FIRST[query]]
    assert not wrong, wrong[:1]
    held = [answer for during, _, answer in answers if during]
    assert held, f"no search ran while ChunkHound held the index ({len(answers)} searches)"
    assert all("not searched" not in answer.get("notice", "") for _, _, answer in answers)
    settled(db)
    assert _first(api.search(query="moveToWishlist", path=five.paths, format="json")) == "storefront:src/wishlist.ts"


def test_beside_two_chunkhound_daemons_each_repository_refreshes_on_its_own(chunkhound, five, tmp_path):
    """``chunkhound mcp`` on the gateway and on the telemetry project, each daemon holding its index: a
    long-lived host (as the MCP server and the pack are) answers for all five; new code in one is found within
    5 s of its own ChunkHound finding it, while every search of the others keeps its right first result, then the
    same for the other (issue 26, item 3)."""
    index.refresh_in_background()
    added = {
        "gateway": ("proxy/retry.go", "package proxy\n\n// RetryUpstreamCall tries again.\nfunc RetryUpstreamCall"
                    "(attempts int) int {\n\treturn attempts + 1\n}\n", "func RetryUpstreamCall"),
        "telemetry": ("src/export.rs", "/// Sends the traces.\npub fn export_trace_batch(count: usize) -> usize {\n"
                      "    count\n}\n", "fn export_trace_batch"),
    }  # fmt: skip
    others = itertools.cycle(FIRST.items())
    timings: dict[str, float] = {}

    def search(query: str) -> dict:
        return api.search(query=query, path=five.paths, format="json")

    async def found_by_us(label: str, query: str, since: float) -> None:
        """Searches until the new definition comes first, each time also another repository's query."""
        file = f"{label}:{added[label][0]}"
        while _first(await anyio.to_thread.run_sync(search, query)) != file:
            assert time.monotonic() < since + 30, f"we never found {query}"
            other, first = next(others)
            assert _first(await anyio.to_thread.run_sync(search, other)) == first
            await anyio.sleep(0.1)
        timings[label] = time.monotonic() - since

    async def scenario() -> None:
        with (tmp_path / "chunkhound-stderr.txt").open("w") as errlog:
            roots = [five.roots["gateway"], five.roots["telemetry"]]
            async with chunkhound_mcp(chunkhound, roots, errlog) as (gateway, telemetry):
                daemons = {"gateway": gateway, "telemetry": telemetry}
                for label, pattern in (("gateway", "func ThrottleClient"), ("telemetry", "fn flush_metrics_buffer")):
                    assert pattern.split()[-1] in await _found_by_chunkhound(daemons[label], pattern)()
                    assert holders.writer(five.db(label)) is not None, label  # its daemon holds the index
                for query, first in FIRST.items():
                    answer = await anyio.to_thread.run_sync(search, query)
                    assert _first(answer) == first and "not searched" not in answer.get("notice", ""), answer
                for label, (relative, source, pattern) in added.items():
                    (five.roots[label] / relative).write_text(source)
                    deadline = time.monotonic() + 60
                    while pattern.split()[-1] not in await _found_by_chunkhound(daemons[label], pattern)():
                        assert time.monotonic() < deadline, f"ChunkHound never found {pattern}"
                        await anyio.sleep(0.2)
                    await found_by_us(label, pattern.split()[-1], time.monotonic())

    anyio.run(scenario)
    assert timings["gateway"] <= 5 and timings["telemetry"] <= 5, timings
    assert _first(search("RetryUpstreamCall")) == "gateway:proxy/retry.go"  # the first change is still there
    log = (tmp_path / "chunkhound-stderr.txt").read_text()
    assert "Conflicting lock" not in log and "Could not set lock" not in log, log[-2000:]
