"""One search, start to ranked hits: pick the retrievers for the mode, embed the queries, rank, fuse.

- ``hybrid`` (the default): semantic and lexical lists fused with structural priors (``ranking.hybrid``).
  When it cannot embed (no vectors for the model in the index, no key, the API failing), it answers lexically
  and says why in a notice.
- ``semantic``: ChunkHound's own order, exactly; ``lexical``: words and identifiers, no key; ``regex``:
  ChunkHound's regex search.

The index is opened briefly and never across the embeddings request: a network call of up to 30 s must not
keep ChunkHound locked out of its own index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from onetool_code import cache, embeddings, index, lexical, ranking, retrievers
from onetool_code.errors import BadInputError, EmbeddingError, MissingKeyError, ModelNotInIndexError
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.schema import Filters
from onetool_code.settings import Settings
from onetool_code.spans import note

if TYPE_CHECKING:
    import duckdb

# How deep each list of a hybrid search goes before fusion: deep enough that a definition ranked 60th by one
# ranking and 5th by the other still meets itself.
HYBRID_DEPTH = 100


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
    if request.mode == "lexical":
        for query in request.queries:
            if not lexical.query_tokens(query):
                raise BadInputError(
                    f"query {query!r} has no word of two or more letters or digits to search for in lexical mode"
                )
    semantic, notice = None, None
    if request.mode in ("semantic", "hybrid"):
        try:
            semantic = _embedded(settings, request)
        except (ModelNotInIndexError, MissingKeyError, EmbeddingError) as exc:
            if request.mode == "semantic":
                raise
            notice = f"answered by words only (lexical): {_reason(exc, settings)}"
            note(f"hybrid fell back to lexical: {exc}")
    with index.connect(settings.project_root, settings.db_path) as con:
        # Each hit carries its file's row (size, mtime, hash): shaping tells from it whether the file changed.
        lists = index.with_file_states(con, _rank(con, settings, request, semantic))
    return _finish(request, lists, notice)


def _rank(
    con: duckdb.DuckDBPyConnection, settings: Settings, request: Request, semantic: retrievers.Semantic | None
) -> list[list[Hit]]:
    """One ranked list per query, ``_depth`` deep, from the retrievers the mode calls for."""
    depth = _depth(request)
    if request.mode == "regex":
        index.layout(con, settings.db_path)
        check_languages(index.language_counts(con), request.filters)
        return retrievers.regex(con, request, depth)
    if request.mode == "semantic":
        assert semantic is not None
        return semantic.rank(con, request, depth)
    words_index = retrievers.lexical_index(con, settings)
    check_languages(words_index.language_counts, request.filters)
    if request.mode == "lexical":
        return retrievers.lexical_ranking(con, words_index, request, depth)
    # Hybrid, or what is left of it without vectors: the priors still put definitions first. Each fused list is
    # cut to the depth of the other modes' lists, so that a batch fuses the best of each query.
    deep = max(depth, HYBRID_DEPTH)
    words = retrievers.lexical_ranking(con, words_index, request, deep)
    meanings = semantic.rank(con, request, deep) if semantic else [[] for _ in words]
    return [
        ranking.hybrid(m, w, query, request.filters)[:depth]
        for m, w, query in zip(meanings, words, request.queries, strict=True)
    ]


def _embedded(settings: Settings, request: Request) -> retrievers.Semantic:
    """The configured model's vectors in the index (an error listing what it holds otherwise), and the
    queries' vectors from one embeddings request."""
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
    return retrievers.Semantic(settings, chosen, vectors)


def _reason(exc: Exception, settings: Settings) -> str:
    """Why hybrid could not embed, in a few words (the whole message goes to the span)."""
    if isinstance(exc, ModelNotInIndexError):
        return f"the index holds no vectors for {settings.provider}/{settings.model}"
    if isinstance(exc, MissingKeyError):
        return "no API key for the embeddings (OPENAI_API_KEY)"
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
