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

from onetool_code import request, settings
from onetool_code.answer import formatting, listings, report, shaping, workspace
from onetool_code.errors import OneToolCodeError
from onetool_code.search import find_uses, indexed_path, rank, rank_like
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
        located = _locate(s, settings.Where(path, db, provider, model, base_url, cache, host))
        req = request.parse(
            located.settings, queries=query, limit=limit, offset=offset, language=language, chunk_type=chunk_type,
            include=include, exclude=exclude, expand=expand, mode=mode, content=content, format=format,
            max_bytes=max_bytes, rerank=rerank,
        )  # fmt: skip
        return _answer(s, located, req)


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
        located = _locate(s, settings.Where(path, db, provider, model, base_url, cache, host))
        req = request.parse(
            located.settings, queries=queries, batch=True, limit=limit, language=language, chunk_type=chunk_type,
            include=include, exclude=exclude, expand=expand, mode=mode, content=content, format=format,
            max_bytes=max_bytes, rerank=rerank,
        )  # fmt: skip
        s.add(queryCount=len(req.queries))
        return _answer(s, located, req)


def _locate(s: Span, where: settings.Where) -> settings.Located:
    """The call's project, or its workspace's repositories (``settings.locate``, the one owner of ``path``)."""
    located = settings.locate(where)
    if located.members is None:
        s.add(project=str(located.settings.project_root))
    else:
        roots = " ".join(str(m.settings.project_root) for m in located.members if m.settings)
        s.add(project=roots, repositories=len(located.members))
    return located


def _locate_one(s: Span, where: settings.Where, tool: str) -> settings.Settings:
    resolved = settings.locate_one(where, tool)
    s.add(project=str(resolved.project_root))
    return resolved


def _answer(s: Span, located: settings.Located, req: request.Request) -> Result:
    s.add(limit=req.limit, filters=_describe_filters(req))
    if located.members is not None:
        answered = workspace.search(located.members, req)
        s.add(resultCount=len(answered.results))
        return formatting.render_search(answered.results, req, answered.next_offset, answered.notice)
    resolved = located.settings
    ranked = rank(resolved, shaping.asked(req))
    s.add(resultCount=len(ranked.hits))
    results, next_offset = shaping.fill(ranked.hits, req, resolved.project_root, ranked.next_offset, ranked.above)
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
        resolved = _locate_one(s, settings.Where(path, db, provider, model, base_url, cache, host), "related")
        file, line = request.place(file, line)
        file = indexed_path(resolved.project_root, file)
        req = request.parse(
            resolved, queries=f"like {file}:{line}", limit=limit, offset=offset, language=language,
            chunk_type=chunk_type, include=include, exclude=exclude, expand=expand, mode="semantic", content=content,
            format=format, max_bytes=max_bytes,
        )  # fmt: skip
        s.add(limit=req.limit, filters=_describe_filters(req))
        ranked = rank_like(resolved, req, file, line)
        s.add(resultCount=len(ranked.hits))
        # No words were asked for: no line of a hit is a match to list (the echo keeps the place).
        wordless = replace(req, queries=("",))
        results, next_offset = shaping.fill(
            ranked.hits, wordless, resolved.project_root, ranked.next_offset, ranked.above
        )
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
        resolved = _locate_one(s, settings.Where(path, db, provider, model, base_url, cache, host), "usages")
        written = request.name(name)
        req = request.parse(
            resolved, queries=written, language=language, include=include, exclude=exclude, mode="lexical",
            format=format, max_bytes=max_bytes,
        )  # fmt: skip
        found = find_uses(resolved, written, req.filters)
        s.add(uses=found.count, files=len(found.files))
        return listings.render_usages(found, req.format, req.max_bytes)


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
        located = _locate(s, settings.Where(path, db, provider, model, base_url, cache, host))
        fmt = request.output_format(format)
        if located.members is not None:
            return listings.render_workspace_status(workspace.status(located.members), fmt)
        gathered = report.gather(located.settings)
        facts = gathered.facts
        s.add(files=facts.files, chunks=facts.chunks, locked=facts.locked_by is not None)
        return listings.render_status(gathered, fmt)


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
