"""One search, start to ranked hits: check the index, embed the queries, rank, fuse a batch.

The index is opened twice per semantic search (once when the vector cache is warm), briefly each time, and
never across the embeddings request: a network call of up to 30 s must not keep ChunkHound locked out of its
own index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from onetool_code import cache, embeddings, index, matching, ranking
from onetool_code.errors import BadInputError, EmbeddingError, ModelNotInIndexError
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.schema import Filters
from onetool_code.settings import Settings


@dataclass(frozen=True)
class Ranked:
    """Best hits first; ``next_offset`` is set when a single search has more hits past this page."""

    hits: list[Hit]
    next_offset: int | None = None


def run(settings: Settings, request: Request) -> Ranked:
    if request.mode == "lexical":
        return _lexical(settings, request)
    return _semantic(settings, request)


def _page_size(request: Request) -> int:
    # One extra hit tells a single search whether another page exists; a batch is fused, not paged.
    return request.limit if request.batch else request.limit + 1


def _finish(request: Request, lists: Sequence[Sequence[Hit]]) -> Ranked:
    if request.batch:
        return Ranked(ranking.fuse(lists, request.limit))
    hits = ranking.dedupe(lists[0])
    more = len(lists[0]) > request.limit
    return Ranked(hits[: request.limit], request.offset + request.limit if more else None)


def _semantic(settings: Settings, request: Request) -> Ranked:
    warm = cache.warm(settings.db_path, settings.provider, settings.model) if settings.cache else None
    if warm is not None:  # the file is unchanged since the cache read it: it knows what this connection would
        chosen = warm.embedding_set
        check_languages(warm.language_counts, request.filters)
    else:
        with index.connect(settings.project_root, settings.db_path) as con:
            chosen = embedding_set(index.layout(con, settings.db_path), settings)
            check_languages(index.language_counts(con), request.filters)
    vectors = embeddings.embed(request.queries, settings)
    if vectors.shape[1] != chosen.dims:
        raise EmbeddingError(
            f"{settings.provider}/{settings.model} returned {vectors.shape[1]}-dimensional vectors, but the index "
            f"stores {chosen.dims} dimensions for it: the index was built with other settings."
        )
    with index.connect(settings.project_root, settings.db_path) as con:
        page, offset = _page_size(request), request.offset
        if settings.cache:  # the same hits, from memory once warm; the cache only borrows this connection
            lists = cache.semantic(con, settings.db_path, chosen, vectors, request.filters, page, offset)
        else:
            lists = index.semantic(con, chosen, vectors, request.filters, page, offset)
        lists = index.with_file_states(con, lists)
    return _finish(request, lists)


def _lexical(settings: Settings, request: Request) -> Ranked:
    token_lists = [matching.tokenize(q) for q in request.queries]
    for query, tokens in zip(request.queries, token_lists, strict=True):
        if not tokens:
            raise BadInputError(
                f"query {query!r} has no word of two or more letters or digits to search for in lexical mode"
            )
    with index.connect(settings.project_root, settings.db_path) as con:
        index.layout(con, settings.db_path)
        check_languages(index.language_counts(con), request.filters)
        offset = 0 if request.batch else request.offset
        lists = [index.lexical(con, tokens, request.filters, _page_size(request), offset) for tokens in token_lists]
        lists = index.with_file_states(con, lists)
    return _finish(request, lists)


def embedding_set(layout: index.Layout, settings: Settings) -> index.EmbeddingSet:
    """The vectors of the configured provider/model; an error listing what the index holds otherwise."""
    matching_sets = [s for s in layout.embedding_sets if (s.provider, s.model) == (settings.provider, settings.model)]
    if matching_sets:
        return max(matching_sets, key=lambda s: s.count)
    wanted = f"{settings.provider}/{settings.model}"
    if not layout.embedding_sets:
        raise ModelNotInIndexError(
            f"The index {layout.db_path} holds no embeddings at all (indexed without them?), so it cannot be "
            f'searched for {wanted}. Use mode="lexical", or index with an embedding provider.'
        )
    held = "; ".join(s.describe() for s in layout.embedding_sets)
    raise ModelNotInIndexError(
        f"The index holds no vectors for {wanted}. It holds: {held}. Search with that model (model=..., "
        "provider=..., base_url=... or the project's .chunkhound.json), or re-index with the configured one."
    )


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
