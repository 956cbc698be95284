"""The library's functions and their single error boundary: ``search``, ``search_batch``, ``status``, ``related``
and ``usages`` return text (or JSON data) and never raise; ``run_*`` are the same functions, raising.

Bad input, a missing or locked index, a missing key or a failed embeddings request all come back as
``Error: ...`` (``{"error": ...}`` with ``format="json"``/``"compact"``). An unexpected exception comes back as
``Error: internal error (Type): ...`` and its span carries the traceback.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from onetool_code import engine, formatting, report, request, settings, shaping, similar, uses, workspace
from onetool_code.errors import OneToolCodeError
from onetool_code.spans import Span, span

Result = str | list[Any] | dict[str, Any]


def run_search(
    *,
    query: str,
    path: str | Sequence[str] | None = None,
    db: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    language: str | None = None,
    chunk_type: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    expand: int | None = None,
    mode: str = "hybrid",
    rerank: bool | None = None,
    content: str = "auto",
    format: str = "text",
    max_bytes: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Search one query: the best hits, merged and formatted (see ``code.search``'s docstring for the options);
    ``path`` a list of project roots searches them as one workspace."""
    with span("code.search", query=query, mode=mode) as s:
        resolved, found = _place(s, path, db, provider, model, base_url, cache, host)
        req = request.parse(
            queries=query, batch=False, limit=limit, offset=offset, language=language, chunk_type=chunk_type,
            include=include, exclude=exclude, expand=expand, mode=mode, content=content, format=format,
            max_bytes=max_bytes, default_limit=resolved.limit, default_max_bytes=resolved.max_bytes, rerank=rerank,
        )  # fmt: skip
        return _answer(s, resolved, req, found)


def run_batch(
    *,
    queries: str | Sequence[str],
    path: str | Sequence[str] | None = None,
    db: str | None = None,
    limit: int | None = None,
    language: str | None = None,
    chunk_type: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    expand: int | None = None,
    mode: str = "hybrid",
    rerank: bool | None = None,
    content: str = "auto",
    format: str = "text",
    max_bytes: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Several queries, one embeddings request, one fused list of at most ``limit`` hits, each tagged with
    the queries that found it."""
    with span("code.search_batch", mode=mode) as s:
        resolved, found = _place(s, path, db, provider, model, base_url, cache, host)
        req = request.parse(
            queries=queries, batch=True, limit=limit, offset=None, language=language, chunk_type=chunk_type,
            include=include, exclude=exclude, expand=expand, mode=mode, content=content, format=format,
            max_bytes=max_bytes, default_limit=resolved.limit, default_max_bytes=resolved.max_bytes, rerank=rerank,
        )  # fmt: skip
        s.add(queryCount=len(req.queries))
        return _answer(s, resolved, req, found)


def _resolve(
    s: Span,
    path: str | None,
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    cache: bool | None,
    host: settings.OneToolHost | None,
) -> settings.Settings:
    resolved = settings.resolve(
        path=path, db=db, provider=provider, model=model, base_url=base_url, cache=cache, host=host
    )
    s.add(project=str(resolved.project_root))
    return resolved


def _place(
    s: Span,
    path: str | Sequence[str] | None,
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    cache: bool | None,
    host: settings.OneToolHost | None,
) -> tuple[settings.Settings, list[workspace.Member] | None]:
    """The settings of the call, and its repositories when ``path`` names several (each resolved on its own;
    the first that resolves gives the defaults the user configured, limit and byte budget).

    A workspace configured in OneTool (``tools.code.workspaces``) is named as ``path="@name"`` rather than by a
    parameter of its own: ``path`` is the one answer to "where", so a call cannot name two that disagree, and
    ``["@api", "~/src/web"]`` mixes a workspace with a root."""
    roots = workspace.place(path, settings.workspaces(host))
    if not isinstance(roots, list):
        return _resolve(s, roots, db, provider, model, base_url, cache, host), None

    def resolve(root: str) -> settings.Settings:
        return settings.resolve(
            path=root, db=db, provider=provider, model=model, base_url=base_url, cache=cache, host=host
        )

    found = workspace.members(roots, resolve)
    s.add(project=" ".join(str(m.settings.project_root) for m in found if m.settings), repositories=len(found))
    first = next((m.settings for m in found if m.settings is not None), None)
    if first is None:
        raise workspace.all_failed([(m.label, m.problem) for m in found if m.problem is not None])
    return first, found


def _answer(s: Span, resolved: settings.Settings, req: request.Request, found: list[workspace.Member] | None) -> Result:
    s.add(limit=req.limit, filters=_describe_filters(req))
    if found is not None:
        answered = workspace.search(found, req)
        s.add(resultCount=len(answered.results))
        return formatting.render_search(answered.results, req, answered.next_offset, answered.notice)
    # A hybrid search's page is filled from further down its ranking when merging folds hits into one result. The
    # other modes keep their page of ``limit`` hits: the order they promise (ChunkHound's) is of hits.
    filled = req.mode == "hybrid" and not req.batch
    ranked = engine.run(resolved, replace(req, limit=shaping.FILL * req.limit) if filled else req)
    s.add(resultCount=len(ranked.hits))
    results, next_offset = shaping.fill(ranked.hits, req, resolved.project_root, ranked.next_offset)
    return formatting.render_search(results, req, next_offset, ranked.notice)


def run_related(
    *,
    file: str,
    line: int,
    path: str | None = None,
    db: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    language: str | None = None,
    chunk_type: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    expand: int | None = None,
    content: str = "auto",
    format: str = "text",
    max_bytes: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """The code most like the chunk at ``file``:``line``, by its stored vector: no embeddings request."""
    with span("code.related", file=file, line=line) as s:
        root = workspace.one(path, settings.workspaces(host), "related")
        resolved = _resolve(s, root, db, provider, model, base_url, cache, host)
        file, line = request.place(file, line)
        file = similar.indexed_path(resolved.project_root, file)
        req = request.parse(
            queries=f"like {file}:{line}", batch=False, limit=limit, offset=offset, language=language,
            chunk_type=chunk_type, include=include, exclude=exclude, expand=expand, mode="semantic", content=content,
            format=format, max_bytes=max_bytes, default_limit=resolved.limit, default_max_bytes=resolved.max_bytes,
        )  # fmt: skip
        s.add(limit=req.limit, filters=_describe_filters(req))
        ranked = similar.run(resolved, req, file, line)
        s.add(resultCount=len(ranked.hits))
        # No words were asked for: no line of a hit is a match to list (the echo keeps the place).
        wordless = replace(req, queries=("",))
        results, next_offset = shaping.fill(ranked.hits, wordless, resolved.project_root, ranked.next_offset)
        return formatting.render_search(results, req, next_offset, ranked.notice)


def run_usages(
    *,
    name: str,
    path: str | None = None,
    db: str | None = None,
    language: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    format: str = "text",
    max_bytes: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Where ``name`` is used in the index, by file, its definitions left out: no embeddings request."""
    with span("code.usages", usage=name) as s:
        root = workspace.one(path, settings.workspaces(host), "usages")
        resolved = _resolve(s, root, db, provider, model, base_url, cache, host)
        written = request.name(name)
        req = request.parse(
            queries=written, batch=False, limit=None, offset=None, language=language, chunk_type=None,
            include=include, exclude=exclude, expand=None, mode="lexical", content=None, format=format,
            max_bytes=max_bytes, default_limit=resolved.limit, default_max_bytes=resolved.max_bytes,
        )  # fmt: skip
        found = uses.find(resolved, written, req.filters)
        s.add(uses=found.count, files=len(found.files))
        return formatting.render_usages(found, req.format, req.max_bytes)


def run_status(
    *,
    path: str | Sequence[str] | None = None,
    db: str | None = None,
    format: str = "text",
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Where the index is, what it holds, which snapshot answers, and whether ChunkHound is using it right now;
    of each repository when ``path`` names several."""
    with span("code.status") as s:
        resolved, found = _place(s, path, db, provider, model, base_url, cache, host)
        fmt = request.output_format(format)
        if found is not None:
            return formatting.render_workspace_status(workspace.status(found), fmt)
        gathered = report.gather(resolved)
        s.add(files=gathered.files, chunks=gathered.chunks, locked=gathered.locked_by is not None)
        return formatting.render_status(gathered, fmt)


def _describe_filters(req: request.Request) -> str:
    f = req.filters
    parts = [
        f"{name}={'|'.join(values)}"
        for name, values in (
            ("language", f.languages),
            ("chunk_type", f.chunk_types),
            ("include", f.include),
            ("exclude", f.exclude),
        )
        if values
    ]
    return " ".join(parts)


@dataclass(frozen=True)
class Outcome:
    """A call behind the boundary: its answer, or the message of the error that stopped it."""

    answer: Result | None = None
    error: str | None = None


def call(run: Callable[..., Result], options: Mapping[str, Any], accepted: Sequence[str]) -> Outcome:
    """Run ``run(**options)`` behind the error boundary: never raises.

    ``accepted`` are the argument names this caller may give: every parameter of ``run`` for the library, the
    tool's own for the MCP server (whose ``run`` already carries the user's settings). The span inside ``run``
    has already logged a failure with its type (and, for a bug, its traceback).
    """
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        valid = ", ".join(name for name in accepted if name != "host")  # the pack's, never a caller's
        return Outcome(error=f"unknown argument {', '.join(unknown)}; valid: {valid}")
    parameters = inspect.signature(run).parameters.items()
    missing = [name for name, p in parameters if p.default is p.empty and name not in options]
    if missing:
        return Outcome(error=f"missing required argument {', '.join(missing)}")
    try:
        return Outcome(answer=run(**options))
    except OneToolCodeError as exc:
        return Outcome(error=str(exc))
    except Exception as exc:
        return Outcome(error=f"internal error ({type(exc).__name__}): {exc}")


def _boundary(run: Callable[..., Result], name: str) -> Callable[..., Result]:
    """The library's functions: ``run_*`` raise (the CLI turns that into exit codes); the library and the pack
    get the error as their answer, in the format they asked for."""
    accepted = tuple(inspect.signature(run).parameters)

    @functools.wraps(run)
    def guarded(*positional: Any, **options: Any) -> Result:
        if positional:
            return formatting.render_error(
                f'{name}() takes keyword arguments only, e.g. {name}({accepted[0]}="...")', options.get("format")
            )
        outcome = call(run, options, accepted)
        if outcome.error is not None:
            return formatting.render_error(outcome.error, options.get("format"))
        return outcome.answer

    return guarded


search = _boundary(run_search, "search")
search_batch = _boundary(run_batch, "search_batch")
status = _boundary(run_status, "status")
related = _boundary(run_related, "related")
usages = _boundary(run_usages, "usages")
