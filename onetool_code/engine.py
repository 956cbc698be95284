"""One search, start to ranked hits: pick the rankings for the mode, embed the queries, rank, fuse.

- ``hybrid`` (the default): semantic and lexical lists fused with structural priors (``ranking.hybrid``).
  When it cannot embed (no vectors for the model in the index, no key, the API failing), it answers lexically
  and says why in a notice.
- ``semantic``: ChunkHound's own order, exactly; ``lexical``: words and identifiers, no key; ``regex``:
  ChunkHound's regex search.

A search answers from a snapshot of the index (``snapshot.py``) and never opens the file ChunkHound writes. With
snapshots off, it opens the file briefly, twice, and never across the embeddings request: a network call of up to
30 s must not keep ChunkHound locked out of its own index.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence, Set
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from onetool_code import (
    derived,
    embeddings,
    index,
    lexical,
    live,
    lookup,
    ranking,
    reranking,
    retrievers,
    snapshot,
    transport,
)
from onetool_code.errors import BadInputError, EmbeddingError, MissingKeyError, ModelNotInIndexError
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.schema import Filters
from onetool_code.settings import Settings
from onetool_code.source import SourceFiles
from onetool_code.spans import note

# How deep each list of a hybrid search goes before fusion: deep enough that a definition ranked 60th by one
# ranking and 5th by the other still meets itself.
HYBRID_DEPTH = 100
# ... read that many times deeper, to keep at most PER_FILE hits of each file (``_per_file``).
WIDEN = 4
PER_FILE = 10
EMBEDDING_MODES = ("semantic", "hybrid")  # the modes that embed the query


@dataclass(frozen=True)
class Ranked:
    """Best hits first; ``next_offset`` is set when a single search has more hits past this page.

    Each hit's ``rank`` is its place in the query's whole ranked list, so that an answer cut short by its byte
    budget can name the offset of the first hit it left out. ``notice`` says, in one line, when the answer
    is not what the mode promised (hybrid answering by words only, and why).
    """

    hits: list[Hit]
    next_offset: int | None = None
    notice: str | None = None


def run(settings: Settings, request: Request) -> Ranked:
    """The ranked hits of one call. Its requests to servers (embeddings, then reranking) share one
    ``settings.timeout``: no server can hold a search longer."""
    network = transport.Budget(settings.timeout)
    if request.mode in EMBEDDING_MODES:
        embeddings.warm_up(settings)
    if request.mode == "lexical":
        for query in request.queries:
            if not lexical.query_tokens(query):
                raise BadInputError(
                    f"query {query!r} has no word of two or more letters or digits to search for in lexical mode"
                )
    uncached = derived.cache_problem() if settings.cache else None
    if settings.cache and uncached is None:
        return _from_snapshot(settings, request, network)
    with index.connect(settings.project_root, settings.db_path) as con:  # closed before the embeddings request
        layout, counts = index.layout(con, settings.db_path), index.language_counts(con)
    semantic, notice = _embedded(settings, request, layout, counts, network)
    with index.connect(settings.project_root, settings.db_path) as con:
        lists = _rank(retrievers.FromIndex(con, settings.db_path), request, semantic, settings.project_root)
    lists, reranked = _reranked(settings, request, lists, network)
    return _finish(request, lists, "; ".join(n for n in (uncached, notice, reranked) if n) or None)


def _from_snapshot(settings: Settings, request: Request, network: transport.Budget) -> Ranked:
    try:
        return _search_snapshot(settings, request, network)
    except snapshot.Superseded:
        # Another process published the file's new state during this search (the embeddings request is the long
        # part) and removed this snapshot's folder before its lexical index was loaded: search the new one.
        note("the snapshot was superseded during the search: searched again in the new one")
        return _search_snapshot(settings, request, network)
    except snapshot.Damaged as exc:
        note(f"{exc}: searched again")
        live.forget(settings.db_path)
        return _search_snapshot(settings, request, network)


def _search_snapshot(settings: Settings, request: Request, network: transport.Budget) -> Ranked:
    view = live.view(settings.project_root, settings.db_path)
    held = view.snapshot
    if request.mode in EMBEDDING_MODES:
        with contextlib.suppress(ModelNotInIndexError):  # said by _embedded
            held.vectors[index.embedding_set(held.layout, settings)].prefetch()  # read while the query is embedded
    semantic, notice = _embedded(settings, request, held.layout, held.language_counts, network)
    lists = _rank(retrievers.FromSnapshot(held), request, semantic, settings.project_root)
    lists, reranked = _reranked(settings, request, lists, network)
    return _finish(request, lists, "; ".join(n for n in (view.notice, notice, reranked) if n) or None)


@dataclass(frozen=True)
class Semantic:
    """The query vectors of one call (one embeddings request) and the index's vectors they are compared with."""

    embedding_set: index.EmbeddingSet
    vectors: np.ndarray


def _rank(
    reader: retrievers.Reader, request: Request, semantic: Semantic | None, project_root: Path
) -> list[list[Hit]]:
    """One ranked list per query, ``_depth`` deep, from the rankings the mode calls for."""
    depth, filters = _depth(request), request.filters
    if request.mode == "regex":
        return reader.regex(request.queries, filters, depth)
    if request.mode == "semantic":
        assert semantic is not None
        return reader.semantic(semantic.embedding_set, semantic.vectors, filters, depth)
    if request.mode == "lexical":
        return reader.lexical(request.queries, filters, depth)
    # Hybrid, or what is left of it without vectors: the priors still put definitions first. Each fused list is
    # cut to the depth of the other modes' lists, so that a batch fuses the best of each query.
    deep = max(depth, HYBRID_DEPTH)
    wide = deep * WIDEN
    sources = SourceFiles(project_root)
    named = [lookup.find(reader, sources, query, filters, deep) for query in request.queries]
    words = reader.lexical(request.queries, filters, wide)
    meanings = (
        reader.semantic(semantic.embedding_set, semantic.vectors, filters, wide) if semantic else [[] for _ in words]
    )
    ranked = []
    for m, w, query, found in zip(meanings, words, request.queries, named, strict=True):
        kept = {hit.key for hit in found.hits}
        m, w = _per_file(m, deep, kept), _per_file(w, deep, kept)
        ranked.append(ranking.hybrid(m, w, query, filters, found.hits, found.qualified)[:depth])
    return ranked


def _per_file(hits: Sequence[Hit], depth: int, named: Set[tuple[str, int, int]]) -> list[Hit]:
    """The first ``depth`` hits, at most ``PER_FILE`` of each file: a big file whose every chunk holds the query's
    words (Django's ``query.py``, fmt's ``format.h``) must leave room in the list for the other files. The
    definitions of a name the query writes (``named``) are kept past the cap: gin's ``type Engine`` lives in a
    file of many chunks that say ``Engine``."""
    seen: dict[str, int] = {}
    kept = []
    for hit in hits:
        if hit.key in named or seen.get(hit.file_path, 0) < PER_FILE:
            seen[hit.file_path] = seen.get(hit.file_path, 0) + 1
            kept.append(hit)
            if len(kept) == depth:
                break
    return kept


def _reranked(
    settings: Settings, request: Request, lists: list[list[Hit]], network: transport.Budget
) -> tuple[list[list[Hit]], str | None]:
    """Each hybrid list with its fused top reordered by the configured reranker (``request.rerank`` None: when
    one is configured), and a notice when it could not be."""
    reranker = settings.reranker
    if request.rerank is False or (request.rerank is None and (reranker is None or request.mode != "hybrid")):
        return lists, None
    if request.mode != "hybrid":
        raise BadInputError(f'rerank reorders the hybrid ranking; mode="{request.mode}" keeps its own order')
    if reranker is None:
        raise BadInputError(
            "no reranker is configured: ChunkHound reranks with VoyageAI on its own API, or with "
            "embedding.rerank_url (and rerank_format, rerank_model) in .chunkhound.json"
        )
    if reranker.problem is not None:
        if request.rerank:
            raise BadInputError(f"the configured reranker cannot be used: {reranker.problem}")
        return lists, f"not reranked: {reranker.problem}"
    try:
        return [
            reranking.rerank(q, hits, settings, reranker, network)
            for q, hits in zip(request.queries, lists, strict=True)
        ], None
    except reranking.RerankError as exc:
        note(f"rerank failed: {exc}")
        return lists, f"not reranked, the fused order stands: {exc}"


def _embedded(
    settings: Settings,
    request: Request,
    layout: index.Layout,
    language_counts: Sequence[tuple[str, int, int]],
    network: transport.Budget,
) -> tuple[Semantic | None, str | None]:
    """The queries' vectors from one embeddings request, when the mode ranks by meaning, and the configured
    model's vectors in the index to compare them with; for hybrid, a notice instead when it cannot embed."""
    check_languages(language_counts, request.filters)
    if request.mode not in EMBEDDING_MODES:
        return None, None
    try:
        chosen = index.embedding_set(layout, settings)
        settings = replace(settings, model=chosen.model)  # the index's largest set when nothing named a model
        vectors = embeddings.embed(request.queries, settings, budget=network)
        if vectors.shape[1] != chosen.dims:
            raise EmbeddingError(
                f"{settings.provider}/{settings.model} returned {vectors.shape[1]}-dimensional vectors, but the "
                f"index stores {chosen.dims} dimensions for it: the index was built with other settings."
            )
    except (ModelNotInIndexError, MissingKeyError, EmbeddingError) as exc:
        if request.mode == "semantic":
            raise
        note(f"hybrid fell back to lexical: {exc}")
        return None, f"answered by words only (lexical): {_reason(exc, settings)}"
    return Semantic(chosen, vectors), None


def _reason(exc: Exception, settings: Settings) -> str:
    """Why hybrid could not embed, in a few words (the whole message goes to the span)."""
    if isinstance(exc, ModelNotInIndexError):
        return f"the index holds no vectors for {settings.provider}/{settings.model}"
    if isinstance(exc, MissingKeyError):
        return f"no API key for the embeddings ({settings.key_name})"
    first = str(exc).split("\n")[0].split(". ")[0].rstrip(".")
    return first if len(first) <= 160 else first[:157] + "..."


def _depth(request: Request) -> int:
    """How many hits of each ranked list to fetch, always from the top: a page is a slice of the whole list, and
    a duplicate (same path and lines) is recognised only by what ranks above it, earlier pages included. One
    extra hit tells a single search whether another page exists; a batch is fused, not paged."""
    return request.limit if request.batch else request.offset + request.limit + 1


def _finish(request: Request, lists: Sequence[Sequence[Hit]], notice: str | None) -> Ranked:
    if request.batch:
        return Ranked(ranking.fuse(lists, request.limit), notice=notice)
    end = request.offset + request.limit
    page = ranking.page(lists[0], request.offset, end)
    return Ranked(page, end if len(lists[0]) > end else None, notice)


def check_languages(present: Sequence[tuple[str, int, int]], filters: Filters) -> None:
    """A language filter naming no language of this index is a mistake worth saying, not an empty answer.

    ``present``: (language, files, chunks) as ``index.language_counts`` gives them.
    """
    if not filters.languages:
        return
    names = {lang for lang, _, _ in present}
    if not names.intersection(filters.languages):
        held = ", ".join(f"{lang} ({files} files)" for lang, files, _ in present) or "nothing"
        raise BadInputError(f"no files in language {'|'.join(filters.languages)} in this index; it holds: {held}")
