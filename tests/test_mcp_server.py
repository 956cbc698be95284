"""The MCP server end to end: started as a client starts it (a subprocess over stdio) and driven by the SDK's own
client, or by hand where every byte on its stdout must be seen."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.to_thread
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp.client.stdio import stdio_client

from onetool_code import cli, parameters

SERVER = ["-m", "onetool_code", "mcp"]
# Seconds any one answer may take before the test fails instead of hanging (a ChunkHound index takes ~30 s).
PATIENCE = 120


@asynccontextmanager
async def connected(
    errlog: TextIO, *args: str, message_handler: MessageHandlerFnT | None = None
) -> AsyncIterator[ClientSession]:
    """A session of the SDK's client with a server it started itself; ``message_handler`` hears every request
    and notification the server sends."""
    server = StdioServerParameters(command=sys.executable, args=[*SERVER, *args], env=dict(os.environ))
    async with (
        stdio_client(server, errlog=errlog) as (read, write),
        ClientSession(
            read, write, read_timeout_seconds=timedelta(seconds=PATIENCE), message_handler=message_handler
        ) as session,
    ):
        await session.initialize()
        yield session


def talk(
    tmp_path: Path,
    args: list[str],
    scenario: Callable[[ClientSession], Awaitable[Any]],
    message_handler: MessageHandlerFnT | None = None,
) -> Any:
    """Run ``scenario`` against a fresh server started with ``args``; what it returns."""

    async def main() -> Any:
        with (tmp_path / "server-stderr.txt").open("w") as errlog:
            async with connected(errlog, *args, message_handler=message_handler) as session:
                return await scenario(session)

    return anyio.run(main)


def text(result) -> str:
    (content,) = result.content
    return content.text


def test_the_tools_are_listed_with_schemas_from_the_parameters(sample_index, tmp_path):
    async def scenario(session):
        return (await session.list_tools()).tools

    args = ["--path", str(sample_index.root), "--db", str(sample_index.db)]
    listed = {tool.name: tool for tool in talk(tmp_path, args, scenario)}
    assert list(listed) == ["search", "search_batch", "status", "related", "usages"]
    for name, tool in listed.items():
        described = parameters.TOOLS[name]
        assert list(tool.inputSchema["properties"]) == [p.name for p in described]
        assert tool.inputSchema["required"] == [p.name for p in described if p.required]
        assert tool.annotations.readOnlyHint is True
        assert "Args:" not in tool.description and "code." not in tool.description  # OneTool's syntax stays there
    search = listed["search"].inputSchema["properties"]
    assert search["limit"] == {
        "type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": parameters.LIMIT.doc,
    }  # fmt: skip
    assert search["mode"] == {
        "type": "string", "enum": ["hybrid", "semantic", "lexical", "regex"], "default": "hybrid",
        "description": parameters.MODE.doc,
    }  # fmt: skip
    assert search["path"]["description"] == (
        "Project root, or a list of project roots searched as one workspace, each hit named by its repository "
        f"(default: {sample_index.root}; ~ and absolute paths work)."
    )
    related = listed["related"].inputSchema["properties"]["path"]
    assert related == {
        "type": "string", "description": f"Project root (default: {sample_index.root}; ~ and absolute paths work).",
    }  # fmt: skip
    assert (
        search["db"]["description"] == f"Index file or directory, relative to the project (default: {sample_index.db})."
    )
    queries = listed["search_batch"].inputSchema["properties"]["queries"]
    assert queries["anyOf"] == [
        {"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20},
    ]  # fmt: skip
    assert listed["search"].description.startswith(
        "Search the project's code by meaning and by name, and get back where to look, the defining code first."
    )


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(sample_index, tmp_path):
    calls = [
        ("search", {"query": "retry", "limit": 0}),
        ("search", {"query": "retry", "base_url": "http://127.0.0.1:9/v1"}),  # the user's setting, not a call's
        ("search", {"limit": 3}),
        ("search_batch", {"queries": []}),
        ("status", {"path": str(tmp_path / "nowhere")}),
        ("grep", {"pattern": "x"}),
        ("search", {"query": "load config", "mode": "Lexical", "limit": "2", "language": None}),
    ]

    async def scenario(session):
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    *errors, answer = talk(tmp_path, ["--path", str(sample_index.root)], scenario)
    valid = ", ".join(p.name for p in parameters.SEARCH)
    assert [(result.isError, text(result)) for result in errors] == [
        (True, "Error: limit must be a whole number from 1 to 100, got 0"),
        (True, f"Error: unknown argument base_url; valid: {valid}"),
        (True, "Error: missing required argument query"),
        (True, 'Error: queries is empty: give one or more queries, e.g. queries="auth logic|token refresh"'),
        (True, f"Error: Project path does not exist: {tmp_path / 'nowhere'}"),
        (True, "Error: unknown tool grep; valid: search, search_batch, status, related, usages"),
    ]
    assert not answer.isError
    assert text(answer).startswith("Found 2 results for: load config\n1. src/bookshelf/config.py:136-141")


def test_json_answers_are_json_text(sample_index, tmp_path):
    async def scenario(session):
        return await session.call_tool("search_batch", {"queries": ["load config", "retry"], "format": "json"})

    result = talk(tmp_path, ["--path", str(sample_index.root), "--base-url", sample_index.base_url], scenario)
    answer = json.loads(text(result))
    assert not result.isError and answer["count"] == len(answer["results"]) > 0
    assert {"file_path", "start_line", "end_line", "queries"} <= set(answer["results"][0])


def test_a_missing_key_and_a_failing_api_are_tool_errors(sample_index, server, tmp_path):
    async def scenario(session):
        return await session.call_tool("search", {"query": "retry", "mode": "semantic"})

    root = ["--path", str(sample_index.root)]
    missing_key = talk(tmp_path, root, scenario)
    assert missing_key.isError and text(missing_key).startswith("Error: OPENAI_API_KEY not configured in secrets.yaml")
    failing = talk(tmp_path, [*root, "--base-url", server.url("fail500")], scenario)
    assert (failing.isError, text(failing)) == (
        True, f"Error: The embeddings API at {server.url('fail500')} answered HTTP 500: The server had an error.",
    )  # fmt: skip


def test_a_slow_embeddings_request_does_not_hold_up_other_calls(sample_index, server, tmp_path):
    """Each call runs in a worker thread: while one waits seconds for the embeddings API, another answers."""
    finished: list[str] = []

    async def scenario(session):
        async def slow_search():
            await session.call_tool("search", {"query": "retry", "mode": "semantic"})
            finished.append("search")

        async with anyio.create_task_group() as group:
            group.start_soon(slow_search)
            await anyio.sleep(0.5)  # the search is waiting for the slow server by now
            status = await session.call_tool("status", {})
            finished.append("status")
        return status

    status = talk(tmp_path, ["--path", str(sample_index.root), "--base-url", server.url("slow")], scenario)
    assert not status.isError and finished == ["status", "search"]


def test_a_first_read_is_told_to_a_client_that_asks_for_its_progress(sample_index, tmp_path, monkeypatch):
    """A client that passes a progress callback (the SDK sends a ``progressToken``) hears a first read of the
    index as it goes, and nothing of a warm call; a client that passes none hears nothing of a first read, and
    gets the same answer."""
    arguments = {"query": "retry with backoff", "mode": "lexical", "limit": 3}
    heard: list[tuple[float, float | None, str | None]] = []
    notified: list[types.ProgressNotificationParams] = []

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        heard.append((progress, total, message))

    async def note(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ProgressNotification):
            notified.append(message.root.params)

    async def asking(session):
        first = await session.call_tool("search", arguments, progress_callback=hear)
        told = len(heard)
        warm = await session.call_tool("search", arguments, progress_callback=hear)
        return first, told, warm

    args = ["--path", str(sample_index.root)]
    first, told, warm = talk(tmp_path, args, asking, note)
    assert told == len(heard) > 0 and len(notified) == told  # the warm call read nothing, and said nothing
    assert [progress for progress, _, _ in heard] == list(range(1, told + 1))  # increasing, as the protocol wants
    messages = [message for _, _, message in heard]
    reading = f"reading the index {sample_index.db} for the first time: "
    assert all(m.startswith(reading) for m in messages), messages
    assert messages[0].startswith(f"{reading}chunks 0/") and messages[-1].startswith(f"{reading}lexical index 0/")
    assert any(m.startswith(f"{reading}vectors of text-embedding-3-small ") for m in messages), messages
    assert text(first) == text(warm)

    notified.clear()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-cache"))  # never read again, for this server

    async def not_asking(session):
        return await session.call_tool("search", arguments)

    unasked = talk(tmp_path, args, not_asking, note)
    assert notified == [] and text(unasked) == text(first)
    assert any((tmp_path / "another-cache" / "onetool-code" / "snapshot").iterdir())  # a first read it was


class RawClient:
    """The protocol by hand, over the server's real pipes, so that every byte it writes to stdout is seen."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ)
        )
        self.stdout: list[bytes] = []
        self.stderr = b""
        self._ids = iter(range(1, 1_000_000))
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        try:
            self.request("initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"},
            })  # fmt: skip
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            self.__exit__()
            raise

    def _read_stdout(self) -> None:
        for line in self.process.stdout:
            self.stdout.append(line)
            self._lines.put(line)

    def _read_stderr(self) -> None:
        self.stderr = self.process.stderr.read()

    def _send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        number = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        deadline = time.monotonic() + PATIENCE
        while True:
            message = json.loads(self._lines.get(timeout=max(0.0, deadline - time.monotonic())))
            if message.get("id") == number:
                return message

    def close(self) -> None:
        """End the session as a client does (stdin closed): the server exits by itself."""
        self.process.stdin.close()
        assert self.process.wait(timeout=PATIENCE) == 0

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Whatever happened, no server and no reader outlives the test."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for reader in self._readers:
            reader.join(timeout=PATIENCE)
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            pipe.close()


def json_rpc_only(lines: list[bytes]) -> bool:
    return all(json.loads(line).get("jsonrpc") == "2.0" and line.endswith(b"\n") for line in lines)


@pytest.mark.parametrize("to_file", [False, True], ids=["verbose", "log-file"])
def test_stdout_carries_json_rpc_only(sample_index, tmp_path, to_file):
    log = tmp_path / "spans.log"
    flags = ["--log-file", str(log)] if to_file else ["--verbose"]
    with RawClient([sys.executable, *SERVER, "--path", str(sample_index.root), *flags]) as client:
        listed = client.request("tools/list", {})
        found = client.request("tools/call", {"name": "search", "arguments": {"query": "retry", "mode": "lexical"}})
        failed = client.request("tools/call", {"name": "search", "arguments": {"query": "retry", "limit": 0}})
        client.close()
    assert [tool["name"] for tool in listed["result"]["tools"]] == [*parameters.TOOLS]
    assert found["result"]["isError"] is False and failed["result"]["isError"] is True
    assert len(client.stdout) == 4 and json_rpc_only(client.stdout)  # initialize and three answers
    spans = log.read_text() if to_file else client.stderr.decode()
    records = [json.loads(line) for line in spans.splitlines() if line.startswith("{")]
    assert [(r["span"], r["status"]) for r in records] == [("code.search", "SUCCESS"), ("code.search", "FAILED")]


# A dependency that prints, and a C library that writes to descriptor 1, during a call.
NOISY_SERVER = """
import functools, os, sys
from onetool_code import api, cli

quiet = api.run_status

@functools.wraps(quiet)
def noisy(**options):
    print("stray print")
    os.write(1, b"stray bytes on descriptor 1\\n")
    return quiet(**options)

api.run_status = noisy
sys.exit(cli.main(["mcp", *sys.argv[1:]]))
"""


def test_what_else_writes_to_stdout_goes_to_stderr(sample_index):
    with RawClient([sys.executable, "-c", NOISY_SERVER, "--path", str(sample_index.root)]) as client:
        status = client.request("tools/call", {"name": "status", "arguments": {}})
        client.close()
    assert status["result"]["isError"] is False
    assert status["result"]["content"][0]["text"].startswith(f"Project: {sample_index.root}\n")
    assert len(client.stdout) == 2 and json_rpc_only(client.stdout)
    assert b"stray print\n" in client.stderr and b"stray bytes on descriptor 1\n" in client.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--path", "{tmp}/missing"], 2, "Error: Project path does not exist: {tmp}/missing\n"),
        (["--log-file", "{tmp}/missing/spans.log"], 1, "Error: cannot open the log file {tmp}/missing/spans.log: "),
    ],
)
def test_a_server_that_cannot_start_says_why_at_once(capsys, tmp_path, args, code, message):
    assert cli.main(["mcp", *(arg.format(tmp=tmp_path) for arg in args)]) == code
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(message.format(tmp=tmp_path))


@pytest.mark.chunkhound
def test_answers_on_chunkhounds_index_and_leaves_it_byte_identical(chunkhound_project, tmp_path):
    before = chunkhound_project.digest()

    async def scenario(session):
        return [
            await session.call_tool("status", {}),
            await session.call_tool("search", {"query": "retry with exponential backoff"}),
            await session.call_tool("search_batch", {"queries": "parse configuration file|rate limiter token bucket"}),
        ]

    status, found, fused = talk(
        tmp_path, ["--path", str(chunkhound_project.root), "--base-url", chunkhound_project.base_url], scenario
    )
    assert not (status.isError or found.isError or fused.isError)
    assert "Files: " in text(status) and "In use by ChunkHound: no" in text(status)
    assert text(found).startswith("Found ") and "Note:" not in text(found)  # semantic and lexical, fused
    assert text(fused).startswith("Found ") and "for 2 queries" in text(fused).splitlines()[0]
    assert chunkhound_project.digest() == before


@pytest.mark.chunkhound
def test_chunkhound_updates_the_index_while_the_server_runs(chunkhound, chunkhound_project, tmp_path):
    """The server holds nothing between calls: ChunkHound's writer gets the index, and a search soon sees what
    it wrote (refreshed in the background: a search never waits long). While ChunkHound holds the index, a call
    answers from a private copy of it."""
    root = chunkhound_project.root
    new_file = root / "src" / "bookshelf" / "served_module.py"

    async def scenario(session):
        with chunkhound.hold_write_lock(chunkhound_project.db):
            held = await session.call_tool("search", {"query": "retry", "mode": "lexical"})
        before = await session.call_tool("search", {"query": "added_while_served", "format": "json"})
        new_file.write_text("def added_while_served():\n    return 42\n")
        await anyio.to_thread.run_sync(chunkhound.index, root, chunkhound_project.base_url)  # fails if locked out
        answers = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            started = time.monotonic()
            answers.append(await session.call_tool("search", {"query": "added_while_served", "format": "json"}))
            answers[-1].seconds = time.monotonic() - started
            if "served_module.py" in text(answers[-1]):
                break
        return held, before, answers

    held, before, answers = talk(tmp_path, ["--path", str(root), "--base-url", chunkhound_project.base_url], scenario)
    assert not held.isError and text(held).startswith("Found ")
    assert "src/bookshelf/served_module.py" not in text(before)
    assert json.loads(text(answers[-1]))["results"][0]["file_path"] == "src/bookshelf/served_module.py"
    for stale in answers[:-1]:
        assert "this answer is from the snapshot of" in json.loads(text(stale))["notice"]
        assert stale.seconds < 5  # the wait for a background refresh is bounded; answering costs the rest


def test_the_server_exits_when_its_input_closes_whatever_a_call_is_doing(sample_index, server):
    """A call still waiting on a slow embeddings server does not keep the server alive after the client left."""
    server.slow_seconds = 20.0
    argv = [sys.executable, *SERVER, "--path", str(sample_index.root), "--base-url", server.url("slow")]
    try:
        with RawClient(argv) as client:
            client._send({
                "jsonrpc": "2.0", "id": 99, "method": "tools/call",
                "params": {"name": "search", "arguments": {"query": "retry", "mode": "semantic"}},
            })  # fmt: skip
            deadline = time.monotonic() + 10
            while not any(r.path.startswith("/slow/") for r in server.embedding_requests()):
                assert time.monotonic() < deadline, "the call never reached the server"
                time.sleep(0.05)
            started = time.monotonic()
            client.process.stdin.close()
            assert client.process.wait(timeout=PATIENCE) == 0
            assert time.monotonic() - started < 5
    finally:
        server.slow_seconds = 3.0


def test_initialize_tells_the_agent_when_to_call_us(sample_index, tmp_path):
    """The instructions a client shows its model, as the SDK's client receives them at ``initialize``."""

    async def main():
        server = StdioServerParameters(
            command=sys.executable, args=[*SERVER, "--path", str(sample_index.root)], env=dict(os.environ)
        )
        with (tmp_path / "server-stderr.txt").open("w") as errlog:
            async with (
                stdio_client(server, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=timedelta(seconds=PATIENCE)) as session,
            ):
                return await session.initialize()

    initialized = anyio.run(main)
    assert initialized.instructions == parameters.WHEN
    assert "grep" in initialized.instructions and len(initialized.instructions.encode()) < 500


def test_related_and_usages_answer_as_the_library_does(sample_index, tmp_path):
    import onetool_code

    calls = [
        ("related", {"file": "src/bookshelf/retry.py", "line": 40, "limit": 3}),
        ("usages", {"name": "backoff_delays"}),
        ("related", {"file": "nowhere.py", "line": 1}),
    ]

    async def scenario(session):
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    args = ["--path", str(sample_index.root), "--base-url", "http://127.0.0.1:9/v1"]  # no server: none is needed
    related, usages, missing = talk(tmp_path, args, scenario)
    root = str(sample_index.root)
    assert (related.isError, text(related)) == (
        False, onetool_code.related(file="src/bookshelf/retry.py", line=40, limit=3, path=root),
    )  # fmt: skip
    assert (usages.isError, text(usages)) == (False, onetool_code.usages(name="backoff_delays", path=root))
    assert missing.isError and text(missing).startswith("Error: nowhere.py is not in the index")
