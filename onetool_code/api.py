"""The library's three functions and their single error boundary: ``search``, ``search_batch`` and ``status``
return text (or JSON data) and never raise; ``run_*`` are the same functions, raising.

Bad input, a missing or locked index, a missing key or a failed embeddings request all come back as
``Error: ...`` (``{"error": ...}`` with ``format="json"``/``"compact"``). An unexpected exception comes back as
``Error: internal error (Type): ...`` and its span carries the traceback.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from onetool_code import engine, formatting, report, request, settings, shaping
from onetool_code.errors import OneToolCodeError
from onetool_code.spans import span

Result = str | list[Any] | dict[str, Any]


def run_search(
    *,
    query: str,
    path: str | None = None,
    db: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    language: str | None = None,
    chunk_type: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    expand: int | None = None,
    mode: str = "hybrid",
    content: str = "auto",
    format: str = "text",
    max_bytes: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Search one query: the best hits, merged and formatted (see ``code.search``'s docstring for the options)."""
    options = dict(locals())
    return _search("code.search", queries=options.pop("query"), batch=False, **options)


def run_batch(
    *,
    queries: str | Sequence[str],
    path: str | None = None,
    db: str | None = None,
    limit: int | None = None,
    language: str | None = None,
    chunk_type: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    expand: int | None = None,
    mode: str = "hybrid",
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
    return _search("code.search_batch", batch=True, offset=0, **locals())


def _search(
    span_name: str,
    *,
    queries: str | Sequence[str],
    batch: bool,
    path: str | None,
    db: str | None,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    cache: bool | None,
    host: settings.OneToolHost | None,
    **options: Any,
) -> Result:
    fields = {} if batch else {"query": queries}
    with span(span_name, **fields, mode=options["mode"]) as s:
        resolved = settings.resolve(
            path=path, db=db, provider=provider, model=model, base_url=base_url, cache=cache, host=host
        )
        s.add(project=str(resolved.project_root))
        req = request.parse(
            queries=queries,
            batch=batch,
            default_limit=resolved.limit,
            default_max_bytes=resolved.max_bytes,
            **options,
        )
        s.add(limit=req.limit, filters=_describe_filters(req))
        if batch:
            s.add(queryCount=len(req.queries))
        ranked = engine.run(resolved, req)
        s.add(resultCount=len(ranked.hits))
        results = shaping.shape(ranked.hits, req, resolved.project_root)
        return formatting.render_search(results, req, ranked.next_offset, ranked.notice)


def run_status(
    *,
    path: str | None = None,
    db: str | None = None,
    format: str = "text",
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    host: settings.OneToolHost | None = None,
) -> Result:
    """Where the index is, what it holds, and whether ChunkHound is using it right now."""
    with span("code.status") as s:
        resolved = settings.resolve(path=path, db=db, provider=provider, model=model, base_url=base_url, host=host)
        s.add(project=str(resolved.project_root))
        fmt = request.output_format(format)
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


def _boundary(run: Callable[..., Result], name: str) -> Callable[..., Result]:
    """The error boundary: ``run_*`` raise (the CLI turns that into exit codes); the library and the pack
    get the error as their answer. The span inside ``run`` has already logged the failure with its type
    (and, for a bug, its traceback)."""

    parameters = inspect.signature(run).parameters

    @functools.wraps(run)
    def guarded(*positional: Any, **options: Any) -> Result:
        if positional:
            return formatting.render_error(
                f'{name}() takes keyword arguments only, e.g. {name}({next(iter(parameters))}="...")',
                options.get("format"),
            )
        unknown = sorted(set(options) - set(parameters))
        if unknown:
            valid = ", ".join(name for name in parameters if name != "host")
            return formatting.render_error(
                f"unknown argument {', '.join(unknown)}; valid: {valid}", options.get("format")
            )
        missing = [name for name, p in parameters.items() if p.default is p.empty and name not in options]
        if missing:
            return formatting.render_error(f"missing required argument {', '.join(missing)}", options.get("format"))
        try:
            return run(**options)
        except OneToolCodeError as exc:
            return formatting.render_error(str(exc), options.get("format", "text"))
        except Exception as exc:
            return formatting.render_error(
                f"internal error ({type(exc).__name__}): {exc}", options.get("format", "text")
            )

    return guarded


search = _boundary(run_search, "search")
search_batch = _boundary(run_batch, "search_batch")
status = _boundary(run_status, "status")
