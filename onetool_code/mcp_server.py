"""The MCP server, ``python -m onetool_code mcp``: tools ``search``, ``search_batch``, ``status``, ``related`` and
``usages`` over stdio; its ``instructions`` tell the client's agent when to call them (``parameters.WHEN``).

The trap: stdout is the protocol channel, and one stray byte on it (a ``print`` in a dependency, a C library
writing to file descriptor 1) breaks the client's JSON-RPC stream. So the server writes protocol messages to a
duplicate of the real stdout and points descriptor 1, and with it ``sys.stdout``, at stderr while it runs.

Like the pack, it answers from snapshots and never holds the index, so ChunkHound can index or watch the project
while the server runs; the snapshots it has mapped stay mapped as long as it runs. Each call runs on a thread of
its own, so a slow embeddings request does not hold up the protocol (pings, cancellations, other calls), and the
server exits when its input closes, whatever a call is doing. A call whose client sent a ``progressToken`` hears
how a first read of an index goes as ``notifications/progress`` (``_Notifications``); stderr, the client's log,
is not told.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp.types as types
from anyio.lowlevel import EventLoopToken
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server

from onetool_code import api, index, pack, parameters, progress, published, settings
from onetool_code.answer import formatting
from onetool_code.parameters import Parameter

SERVER_NAME = "onetool-code"
# How often a phase of a read that advances step by step (the vectors) is told to the client, at most.
PROGRESS_INTERVAL = 0.25


@dataclass(frozen=True)
class Tool:
    """One MCP tool: the library function it calls and the parameters a call may set."""

    name: str
    run: Callable[..., api.Result]  # the library's ``run_*`` with the server's settings bound
    parameters: tuple[Parameter, ...]
    description: str

    def listing(self) -> types.Tool:
        return types.Tool(
            name=self.name,
            description=self.description,
            inputSchema=input_schema(self.parameters),
            annotations=types.ToolAnnotations(readOnlyHint=True),
        )


def input_schema(described: Sequence[Parameter]) -> dict[str, Any]:
    """The JSON Schema of a tool's arguments, made from the parameters' description."""
    return {
        "type": "object",
        "properties": {p.name: _property(p) for p in described},
        "required": [p.name for p in described if p.required],
        "additionalProperties": False,
    }


def _property(p: Parameter) -> dict[str, Any]:
    if p.type == "integer":
        schema: dict[str, Any] = {"type": "integer", "minimum": p.low, "maximum": p.high}
    elif p.type in ("queries", "paths"):
        texts = {"type": "array", "items": {"type": "string"}, "minItems": p.low or 1, "maxItems": p.high}
        schema = {"anyOf": [{"type": "string"}, texts]}
    elif p.type == "switch":
        schema = {"type": "boolean"}
    elif p.choices:
        schema = {"type": "string", "enum": list(p.choices)}
    else:
        schema = {"type": "string"}
        if p.high is not None:
            schema.update(minLength=p.low, maxLength=p.high)
    if p.default is not None:
        schema["default"] = p.default
    return {**schema, "description": p.doc}


def _tools(
    *,
    root: str | list[str],
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    cache: bool | None,
    workspaces: Mapping[str, list[str]],
) -> dict[str, Tool]:
    """The tools for a server started on project ``root``, or on the workspace ``root`` lists: a call's
    ``path`` and ``db`` default to the server's (``related`` and ``usages``, which search one project, to its
    first); the embedding settings and the cache are the user's, fixed for every call. A call of any tool may
    name a workspace of the server's file (``--workspace FILE``) as ``path="@name"``, as the pack names one of
    OneTool's config (``related`` and ``usages`` a workspace of one root)."""
    first = root if isinstance(root, str) else root[0]
    default = root if isinstance(root, str) else ", ".join(root)
    named = f"; or a workspace by name: {', '.join(f'@{name}' for name in workspaces)}" if workspaces else ""
    path_doc = f"Project root (default: {first}; ~ and absolute paths work{named})."
    paths_doc = (
        f"Project root, or a list of project roots searched as one workspace, each hit named by its repository "
        f"(default: {default}; ~ and absolute paths work{named})."
    )
    shown = {
        parameters.PATH: dataclasses.replace(parameters.PATH, doc=path_doc),
        parameters.PATHS: dataclasses.replace(parameters.PATHS, doc=paths_doc),
    }
    if db is not None:
        db_doc = f"Index file or directory, relative to the project (default: {db})."
        shown[parameters.DB] = dataclasses.replace(parameters.DB, doc=db_doc)
    place = {"path": root, "db": db}
    one = {"path": first, "db": db}
    embedding = {"provider": provider, "model": model, "base_url": base_url}
    found = [
        ("search", functools.partial(api.run_search, **place, **embedding, cache=cache), pack.search),
        ("search_batch", functools.partial(api.run_batch, **place, **embedding, cache=cache), pack.search_batch),
        ("status", functools.partial(api.run_status, **place, **embedding, cache=cache), pack.status),
        ("related", functools.partial(api.run_related, **one, **embedding, cache=cache), pack.related),
        ("usages", functools.partial(api.run_usages, **one, **embedding, cache=cache), pack.usages),
    ]
    return {
        name: Tool(
            name=name,
            run=_naming(run, workspaces),
            parameters=tuple(shown.get(p, p) for p in parameters.TOOLS[name]),
            description=_description(documented),
        )
        for name, run, documented in found
    }


def _naming(run: Callable[..., api.Result], workspaces: Mapping[str, list[str]]) -> Callable[..., api.Result]:
    """``run`` with each ``@name`` of a call's ``path`` replaced by the roots of that workspace of the server's
    file; an unknown name is bad input naming the known ones (raised inside the call: ``api.call`` answers it)."""

    @functools.wraps(run)  # its signature stays the partial's: ``api.call`` reads the required arguments there
    def named(**options: Any) -> api.Result:
        if "path" in options:
            options["path"] = settings.named_paths(options["path"], workspaces)
        return run(**options)

    return named


def _description(function: Callable[..., Any]) -> str:
    """The pack's docstring up to its ``Args:``: the same product text the OneTool agent reads; the arguments
    are described by the schema, and the pack's example is OneTool's syntax."""
    return (inspect.getdoc(function) or "").split("\n\nArgs:")[0]


async def _call(tool: Tool, arguments: Mapping[str, Any], notifications: _Notifications | None) -> types.CallToolResult:
    """One tool call through the library's error boundary: an error is a tool error carrying ``Error: ...``;
    ``notifications``: the client's, when it asked to hear the call's progress."""
    # A JSON null is how many clients leave an optional argument out.
    given = {name: value for name, value in arguments.items() if value is not None}
    accepted = [p.name for p in tool.parameters]
    call = functools.partial(api.call, tool.run, given, accepted)
    if notifications is not None:
        call = functools.partial(_watched, notifications.reading, call)
    try:
        outcome = await _on_daemon_thread(call)
    finally:
        if notifications is not None:
            notifications.open = False  # the call is over (or cancelled): its thread's reads tell nobody now
    if outcome.error is not None:
        return _result(formatting.render_error(outcome.error, "text"), error=True)
    # A json answer (and status or usages in compact) is a dict: sent as compact JSON text, as OneTool sends it.
    return _result(formatting.as_text(outcome.answer), error=False)


async def _on_daemon_thread(call: Callable[[], api.Outcome]) -> api.Outcome:
    """``call()`` on a daemon thread of its own, awaited. When the client goes away, the server cancels the calls
    in flight and exits: a thread cannot be stopped, and a call may wait on a slow server for its whole timeout,
    so the thread is left behind, and being a daemon it does not hold up the exit (anyio's worker threads
    would)."""
    finished = anyio.Event()
    token = anyio.lowlevel.current_token()
    outcome: list[api.Outcome] = []

    def run() -> None:
        try:
            outcome.append(call())  # api.call never raises
        finally:
            with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody is waiting any more
                anyio.from_thread.run_sync(finished.set, token=token)

    threading.Thread(target=run, name="onetool-code call", daemon=True).start()
    await finished.wait()
    return outcome[0]


def _watched(watcher: progress.Watcher, call: Callable[[], api.Outcome]) -> api.Outcome:
    """``call()`` with its first reads told to ``watcher``; on the call's own thread, as a context variable is."""
    with progress.watching(watcher):
        return call()


class _Notifications:
    """The progress of one call's first reads, sent to its client as ``notifications/progress`` under the token
    the client gave. A read runs on the call's thread and the session lives on the event loop: each notification
    is sent there (``anyio.from_thread.run``), the thread waiting until it is written, so that they go out in
    order and before the answer. None is sent once the call is over (``open``), as the protocol wants, though a
    cancelled call's thread reads on. The protocol wants each ``progress`` greater than the last and a read has
    phases of different sizes, so ``progress`` counts the notifications and the message carries the counts."""

    def __init__(self, session: ServerSession, token: str | int, request_id: str, loop: EventLoopToken) -> None:
        self.session = session
        self.token = token
        self.request_id = request_id
        self.loop = loop
        self.open = True
        self.sent = 0
        self.index = Path()
        self.what = ""
        self.told_at = 0.0

    def reading(self, index: Path) -> progress.Reading:
        """The ``progress.Watcher``: every read of the call is told under the one token."""
        self.index, self.what = index, ""
        return self

    def __call__(self, what: str, done: int, total: int) -> None:
        now = time.monotonic()
        if what == self.what and done < total and now - self.told_at < PROGRESS_INTERVAL:
            return
        self.what, self.told_at = what, now
        message = f"reading the index {self.index} for the first time: {what} {done:,}/{total:,}"
        with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody is waiting any more
            anyio.from_thread.run(self._send, message, token=self.loop)

    def close(self) -> None:
        """The answer itself says the read is over."""

    async def _send(self, message: str) -> None:
        if not self.open:
            return
        self.sent += 1
        # The client has gone: the read goes on all the same, for the calls of the next client.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self.session.send_progress_notification(
                self.token, self.sent, message=message, related_request_id=self.request_id
            )


def _notifications(server: Server) -> _Notifications | None:
    """The current request's client's notifications, when it sent a progress token."""
    context = server.request_context
    token = context.meta.progressToken if context.meta is not None else None
    if token is None:
        return None
    return _Notifications(context.session, token, str(context.request_id), anyio.lowlevel.current_token())


def _result(text: str, *, error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=error)


def _server(found: Mapping[str, Tool]) -> Server:
    server: Server = Server(SERVER_NAME, version=version("onetool-code"), instructions=parameters.WHEN)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [tool.listing() for tool in found.values()]

    # Arguments are checked by the library, not by the SDK against the schema: the library accepts what agents
    # send ("5" for 5, "Lexical") and its messages say what is valid.
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        tool = found.get(name)
        if tool is None:
            return _result(
                formatting.render_error(f"unknown tool {name}; valid: {', '.join(found)}", "text"), error=True
            )
        return await _call(tool, arguments, _notifications(server))

    return server


def serve(
    *,
    path: str | Sequence[str] | None,
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    cache: bool | None,
    workspaces: Mapping[str, list[str]] | None = None,
) -> None:
    """Serve over stdin/stdout until the client closes stdin; ``path`` several roots: their workspace;
    ``workspaces`` the named ones of the user's ``--workspace`` file, which a call names as ``path="@name"``. A
    project path that does not exist fails here, at start, not at every call."""
    given = [path] if path is None or isinstance(path, str) else list(path)
    roots = [_root(p) for p in given]
    root = roots[0] if len(roots) == 1 else roots
    index.refresh_in_background()  # a long-lived process: a search never waits for a long refresh
    tools = _tools(
        root=root, db=db, provider=provider, model=model, base_url=base_url, cache=cache, workspaces=workspaces or {}
    )
    server = _server(tools)

    async def run() -> None:
        with _stdout_for_protocol_only() as protocol:
            async with stdio_server(stdout=anyio.wrap_file(protocol)) as (incoming, outgoing):
                await server.run(incoming, outgoing, server.create_initialization_options())

    anyio.run(run)


def _root(path: str | None) -> str:
    """The folder a root names, checked now; a store URL stays a URL (checked and fetched now too), so that each
    call searches the store's newest version."""
    found = str(settings.project_root(path))
    return path if path is not None and published.is_url(path) else found


@contextlib.contextmanager
def _stdout_for_protocol_only() -> Iterator[TextIO]:
    """A duplicate of the real stdout for protocol messages; descriptor 1 points at stderr meanwhile."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    try:
        yield protocol
    finally:
        sys.stdout.flush()
        protocol.flush()
        os.dup2(protocol.fileno(), 1)
        protocol.close()
