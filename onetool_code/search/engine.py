"""One search, start to ranked hits: ask the index for the view to read, embed the queries, rank, rerank, page.

- ``hybrid`` (the default): semantic and lexical lists fused with structural priors (``retrieval``). When it
  cannot embed (no vectors for the model in the index, no key, the API failing), it answers lexically and says
  why in a notice (``query_vectors``).
- ``semantic``: ChunkHound's own order, exactly; ``lexical``: words and identifiers, no key; ``regex``:
  ChunkHound's regex search.
- A hybrid search of names only (``IntoResponse``, ``Template.render``) asks for no vectors unless the words and the
  definitions found nothing (``names_first``): its answer does not wait for the embeddings API, and says nothing
  of it.

A search answers from a snapshot of the index and never opens the file ChunkHound writes; with snapshots off it
reads the file briefly, never across the embeddings request (``index``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from onetool_code import index
from onetool_code.hits import Hit
from onetool_code.request import Request, check_words
from onetool_code.search import query_vectors, ranking, reranking, retrieval, transport
from onetool_code.settings import Settings


@dataclass(frozen=True)
class Ranked:
    """Best hits first; ``next_offset`` is set when a single search has more hits past this page.

    Each hit's ``rank`` is its place in the query's whole ranked list, so that an answer cut short by its byte
    budget can name the offset of the first hit it left out. ``notice`` says, in one line, when the answer
    is not what the mode promised (hybrid answering by words only, and why). ``above``: the hits of the pages
    before this one (``offset`` > 0), so that a hit whose lines one of them showed is not shown again.
    ``shares``: of a hybrid search, each of the queries' words (``names.query_tokens``) with the share of the
    index's chunks that hold it: how much the repository is about it, which a workspace weighs it by
    (``workspace._about``).
    """

    hits: list[Hit]
    next_offset: int | None = None
    notice: str | None = None
    above: list[Hit] = field(default_factory=list)
    shares: dict[str, float] = field(default_factory=dict)


def run(
    settings: Settings, request: Request, shared: query_vectors.Shared | None = None, unfound_by_meaning: bool = True
) -> Ranked:
    """The ranked hits of one call. Its requests to servers (embeddings, then reranking) share one
    ``settings.timeout``: no server can hold a search longer. ``shared``: the query vectors a workspace's
    other repositories have asked for (one embeddings request per model). ``unfound_by_meaning``: whether a
    search of names that the words and the definitions do not find asks for the vectors (a workspace asks them
    only when no repository found the names)."""
    network = transport.Budget(settings.timeout)
    names = names_first(request)
    if not names:
        query_vectors.warm_up(settings, request)
    check_words(request)
    unfound = names and unfound_by_meaning
    return index.open(settings).search(lambda view: _search(settings, request, view, network, shared, names, unfound))


def names_first(request: Request) -> bool:
    """A hybrid search whose every query only names things (``ranking.names_only``): their vectors would not be
    fused, unless the words and the definitions found nothing."""
    return request.mode == "hybrid" and all(ranking.names_only(query) for query in request.queries)


def _search(
    settings: Settings,
    request: Request,
    view: index.View,
    network: transport.Budget,
    shared: query_vectors.Shared | None,
    names: bool,
    unfound: bool,
) -> Ranked:
    """``names``: a search of names only, ranked first without vectors; ``unfound``: then with them if the words
    and the definitions found nothing, for every query of a batch."""
    view.check_languages(request.filters)
    lists, notice, shares = _ranked(settings, request, view, network, shared, embed=not names)
    if unfound and not any(lists):
        lists, notice, shares = _ranked(settings, request, view, network, shared, embed=True)
    lists, reranked = reranking.reranked(settings, request, lists, network)
    return replace(_finish(request, lists, _joined(view.notice, notice, reranked)), shares=shares)


def _ranked(
    settings: Settings,
    request: Request,
    view: index.View,
    network: transport.Budget,
    shared: query_vectors.Shared | None,
    embed: bool,
) -> tuple[list[list[Hit]], str | None, dict[str, float]]:
    """One ranked list per query, with the queries' vectors when ``embed``; for hybrid, a notice when it answers
    by words only, and the share of the index's chunks that hold each of the queries' words (``Ranked``)."""
    semantic, notice = query_vectors.embedded(settings, request, view, network, shared) if embed else (None, None)
    if semantic is not None:
        view, unembedded = query_vectors.with_checkout(settings, view, semantic, network)
        notice = _joined(notice, unembedded)
    with view.reader() as reader:
        shares = reader.shares(request.queries) if request.mode == "hybrid" else {}
        try:
            return retrieval.ranked(reader, request, semantic, settings.project_root), notice, shares
        except index.RowsUnreachable:
            if request.mode != "hybrid":
                raise
            lists = retrieval.ranked(reader, request, None, settings.project_root)
            return lists, _joined(notice, f"answered by words only (lexical): {index.RowsUnreachable.SHORT}"), shares


def _finish(request: Request, lists: Sequence[Sequence[Hit]], notice: str | None) -> Ranked:
    if request.batch:
        hits = ranking.fuse(lists, request.limit)
        return Ranked(hits, notice=_joined(notice, ranking.unscored(hits)))
    return paged(request, lists[0], notice)


def paged(request: Request, hits: Sequence[Hit], notice: str | None) -> Ranked:
    """The page a single search asked for of its whole ranked list, and the offset of the next when the list goes
    on past it (it was fetched one deeper than the page to tell: ``Request.depth``)."""
    end = request.offset + request.limit
    page = ranking.page(hits, request.offset, end)
    following = end if len(hits) > end else None
    return Ranked(page, following, _joined(notice, ranking.unscored(page)), ranking.dedupe(hits[: request.offset]))


def _joined(*notices: str | None) -> str | None:
    return "; ".join(n for n in notices if n) or None
