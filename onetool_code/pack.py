"""Semantic code search over ChunkHound indexes: where to look, what is defined there, which lines matched; code
like a place (``related``) and where a name is used (``usages``).

The OneTool pack ``code``. OneTool imports this file standalone, at server start, and a failed import loses
the pack silently: so the module imports nothing but the standard library, and everything heavy (duckdb,
openai, tree-sitter) is imported inside the functions, on the first call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onetool_code import settings

pack = "code"
__all__ = ["related", "search", "search_batch", "status", "usages"]


def search(
    *,
    query: str,
    path: str | list[str] | None = None,
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
) -> str | list | dict:
    """Search the project's code by meaning and by name, and get back where to look, the defining code first.

    Call it rather than grep or glob for a behaviour or concept in words, a name whose spelling or place you do
    not know, or "where is X handled"; grep a string you already know exactly. Answers are places to Read next.

    Each hit gives file:start-end, its type and name, the definitions inside it (in a long hit such as a
    whole class, the one the query is about first, its lines the preview and the matches), the lines that
    matched the query's words, and the code itself when there are at most 3 hits (all of it for 1 hit, up to
    150 lines each for 2-3). Hits of one file that overlap or touch are merged; the hits of one file come
    together under its path (``2. :40-52`` is lines 40-52 of it). Line numbers are the file's own; a note
    says when a file changed since indexing (moved or edited lines, or deleted). The answer stays within
    max_bytes (5,000 by default): over that, code, then previews, then the lowest hits are left out, and
    the last line says so. Given several project roots, one ranked answer covers them all, each hit named
    repository:file:start-end (its folder name); a repository that cannot be searched is named in a note.

    Args:
        query: What you are looking for, in words or identifiers (at most 2,000 characters).
        path: Project root, or a list of project roots searched as one workspace, each hit named by its
            repository (default: OT_CWD, else the current directory; ~ and relative paths work).
        db: Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db).
        limit: Number of hits, 1-100 (default 10).
        offset: Skip this many hits, 0-100,000: the next page (the answer names the next offset).
        language: Only these languages, |-separated (python|typescript|go; aliases like py, ts, rs work).
        chunk_type: Only these chunk types, |-separated (function|method|class|interface|struct|comment|...).
        include: Keep only paths containing one of these |-separated substrings (case-insensitive).
        exclude: Drop paths containing any of these |-separated substrings (exclude="test|mock|fixture").
        expand: Lines of context, 0-200, before and after each hit, read from the file; implies code.
        mode: "hybrid" (the default: meaning and words fused, the defining code first; falls back to words alone
            when it cannot embed), "semantic" (ChunkHound's own ranking), "lexical" (words and identifiers;
            needs no API key) or "regex" (query is a regular expression over the code).
        rerank: Rerank the fused top with the reranker ChunkHound is configured with (default: when one is
            configured); false keeps the fused order.
        content: "auto" (code for 1-3 hits), "always" or "never".
        format: "text" (the default), "json" (a dict of results with full field names) or "compact" (never
            bigger than text: a JSON line, hits as a file and its results as rows [start, end, what, score,
            preview lines?, {details}?], then those preview and code lines as they are, counted in the rows).
        max_bytes: Response budget in bytes, 500-1,000,000 (default 5,000).

    Returns:
        The hits as text (``Found N results for: ...``), a dict for json (``{"results": [...], ...}``),
        its JSON line and lines for compact, or ``Error: ...`` saying what went wrong and what to do (for example: not indexed, index in use).

    Example:
        code.search(query="where are auth tokens validated", exclude="test|mock", limit=5)
    """
    from onetool_code import api

    return api.search(
        query=query, path=path, db=db, limit=limit, offset=offset, language=language, chunk_type=chunk_type,
        include=include, exclude=exclude, expand=expand, mode=mode, rerank=rerank, content=content, format=format,
        max_bytes=max_bytes, host=_host(),
    )  # fmt: skip


def search_batch(
    *,
    queries: str | list[str],
    path: str | list[str] | None = None,
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
) -> str | list | dict:
    """Run several searches at once: one embeddings request, one fused list of the best hits of all of them.

    Each query's best hits surface (reciprocal-rank fusion), duplicates are dropped, the list is capped at
    limit in total, and every hit says which queries found it (q1,3).

    Args:
        queries: Up to 20 queries, |-separated ("auth logic|token refresh") or a list.
        path: Project root, or a list of project roots searched as one workspace, each hit named by its
            repository (default: OT_CWD, else the current directory; ~ and relative paths work).
        db: Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db).
        limit: Number of hits, 1-100 (default 10).
        language: Only these languages, |-separated (python|typescript|go; aliases like py, ts, rs work).
        chunk_type: Only these chunk types, |-separated (function|method|class|interface|struct|comment|...).
        include: Keep only paths containing one of these |-separated substrings (case-insensitive).
        exclude: Drop paths containing any of these |-separated substrings (exclude="test|mock|fixture").
        expand: Lines of context, 0-200, before and after each hit, read from the file; implies code.
        mode: "hybrid" (the default: meaning and words fused, the defining code first; falls back to words alone
            when it cannot embed), "semantic" (ChunkHound's own ranking), "lexical" (words and identifiers;
            needs no API key) or "regex" (query is a regular expression over the code).
        rerank: Rerank the fused top with the reranker ChunkHound is configured with (default: when one is
            configured); false keeps the fused order.
        content: "auto" (code for 1-3 hits), "always" or "never".
        format: "text" (the default), "json" (a dict of results with full field names) or "compact" (never
            bigger than text: a JSON line, hits as a file and its results as rows [start, end, what, score,
            preview lines?, {details}?], then those preview and code lines as they are, counted in the rows).
        max_bytes: Response budget in bytes, 500-1,000,000 (default 5,000).

    Returns:
        The fused hits as text, a dict for json (``{"results": [...], ...}``), its JSON line and lines for
        compact, or ``Error: ...``.

    Example:
        code.search_batch(queries="session expiry|token refresh|logout", exclude="test")
    """
    from onetool_code import api

    return api.search_batch(
        queries=queries, path=path, db=db, limit=limit, language=language, chunk_type=chunk_type,
        include=include, exclude=exclude, expand=expand, mode=mode, rerank=rerank, content=content, format=format,
        max_bytes=max_bytes, host=_host(),
    )  # fmt: skip


def status(*, path: str | list[str] | None = None, db: str | None = None) -> str | list | dict:
    """Show the project's index: where it is, its size and age, files, chunks, embeddings per model,
    languages, and whether ChunkHound is using it right now. Tells how to index an unindexed project.

    Args:
        path: Project root, or a list of project roots searched as one workspace, each hit named by its
            repository (default: OT_CWD, else the current directory; ~ and relative paths work).
        db: Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db).

    Returns:
        A short report as text (a block per repository of a workspace), or
        ``Error: Project not indexed. Run: chunkhound index ...``.

    Example:
        code.status()
    """
    from onetool_code import api

    return api.status(path=path, db=db, host=_host())


def related(
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
) -> str | list | dict:
    """More code like a place you found: ranked by the stored vector of the chunk at file:line, every chunk
    holding that line left out (it is the place itself). Needs no API key and no network; answers as search does.

    Args:
        file: A file of the index, as answers show it (relative to the project root).
        line: A line of that file, 1-10,000,000: the smallest indexed chunk holding it is matched.
        path: Project root (default: OT_CWD, else the current directory; ~ and relative paths work).
        db: Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db).
        limit: Number of hits, 1-100 (default 10).
        offset: Skip this many hits, 0-100,000: the next page (the answer names the next offset).
        language: Only these languages, |-separated (python|typescript|go; aliases like py, ts, rs work).
        chunk_type: Only these chunk types, |-separated (function|method|class|interface|struct|comment|...).
        include: Keep only paths containing one of these |-separated substrings (case-insensitive).
        exclude: Drop paths containing any of these |-separated substrings (exclude="test|mock|fixture").
        expand: Lines of context, 0-200, before and after each hit, read from the file; implies code.
        content: "auto" (code for 1-3 hits), "always" or "never".
        format: "text" (the default), "json" (a dict of results with full field names) or "compact" (never
            bigger than text: a JSON line, hits as a file and its results as rows [start, end, what, score,
            preview lines?, {details}?], then those preview and code lines as they are, counted in the rows).
        max_bytes: Response budget in bytes, 500-1,000,000 (default 5,000).

    Returns:
        The hits as search gives them, or ``Error: ...`` (file not in the index, no chunk at that line, no
        vectors for the model).

    Example:
        code.related(file="src/auth/tokens.py", line=42, exclude="test")
    """
    from onetool_code import api

    return api.related(
        file=file, line=line, path=path, db=db, limit=limit, offset=offset, language=language,
        chunk_type=chunk_type, include=include, exclude=exclude, expand=expand, content=content, format=format,
        max_bytes=max_bytes, host=_host(),
    )  # fmt: skip


def usages(
    *,
    name: str,
    path: str | None = None,
    db: str | None = None,
    language: str | None = None,
    include: str | None = None,
    exclude: str | None = None,
    format: str = "text",
    max_bytes: int | None = None,
) -> str | list | dict:
    """Where a name is used: the lines that write it (whole identifiers), grouped by file, code first, then tests
    and docs; its definitions left out; a count per file when the list is long. No API key needed.

    Args:
        name: A name, bare (bulk_create) or qualified as search reads it (QuerySet.bulk_create, timezone.now).
        path: Project root (default: OT_CWD, else the current directory; ~ and relative paths work).
        db: Index file or directory, relative to the project (default: ChunkHound's .chunkhound/db/chunks.db).
        language: Only these languages, |-separated (python|typescript|go; aliases like py, ts, rs work).
        include: Keep only paths containing one of these |-separated substrings (case-insensitive).
        exclude: Drop paths containing any of these |-separated substrings (exclude="test|mock|fixture").
        format: "text" (the default), "json" (a dict of results with full field names) or "compact" (never
            bigger than text: a JSON line, hits as a file and its results as rows [start, end, what, score,
            preview lines?, {details}?], then those preview and code lines as they are, counted in the rows).
        max_bytes: Response budget in bytes, 500-1,000,000 (default 5,000).

    Returns:
        ``N uses of NAME in M files`` and the files with their lines, or ``Error: ...``.

    Example:
        code.usages(name="QuerySet.bulk_create", exclude="test")
    """
    from onetool_code import api

    return api.usages(
        name=name, path=path, db=db, language=language, include=include, exclude=exclude, format=format,
        max_bytes=max_bytes, host=_host(),
    )  # fmt: skip


def _host() -> settings.OneToolHost | None:
    """OneTool's settings and secrets; and, since OneTool runs all day, searches that refresh a changed index in
    the background rather than wait for it."""
    from onetool_code import index, settings

    index.refresh_in_background()
    return settings.onetool_host()
