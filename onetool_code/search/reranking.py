"""The fused top of a hybrid search reordered by the reranker ChunkHound is configured with (``settings.Reranker``).

ChunkHound 6.1.0 reranks in its multi-hop search whenever its provider can: VoyageAI on its own API (the
``rerank-2.5`` model through its ``/rerank``), or any provider with ``embedding.rerank_url``. The request is
built as ChunkHound builds it, by format:

- ``cohere``: ``{model, query, documents, top_n}``, answered ``{"results": [{index, relevance_score}]}``;
- ``voyage``: ``{model, query, documents, top_k}`` (plus ``truncation`` on VoyageAI's own API), answered
  ``{"data": [...]}``;
- ``tei``: ``{query, texts}``, answered ``[{index, score}]``;
- ``auto``: Cohere's shape when a model is named, else TEI's; any of the answers is read.

The provider's key goes along as a bearer token, under the trust rule of ``settings.api_key``: a rerank URL named
only by the project's files gets only the project's key. Documents are the chunks' code; batches of
``rerank_batch_size`` are merged by score. A failure never fails the search: the fused order stands, with a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from onetool_code import settings as config
from onetool_code.errors import BadInputError, EmbeddingError, RerankError, Stalled, TooLarge
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.search import transport
from onetool_code.settings import Reranker, Settings
from onetool_code.spans import note

# How much of a fused list is reranked: the candidates of a full page (``shaping.FILL`` x the default limit).
RERANK_TOP = 30


def reranked(
    settings: Settings, request: Request, lists: list[list[Hit]], budget: transport.Budget
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
            rerank(q, hits, settings, reranker, budget) for q, hits in zip(request.queries, lists, strict=True)
        ], None
    except RerankError as exc:
        note(f"rerank failed: {exc}")
        return lists, f"not reranked, the fused order stands: {exc}"


def rerank(
    query: str, hits: Sequence[Hit], settings: Settings, reranker: Reranker, budget: transport.Budget
) -> list[Hit]:
    """``hits`` with their first ``RERANK_TOP`` in the reranker's order, each scored by it; the rest after.
    ``budget``: the search's time on the network, what its embeddings request left of it."""
    top = list(hits[:RERANK_TOP])
    if not top:
        return list(hits)
    documents = [hit.code for hit in top]
    scored: list[tuple[int, float]] = []
    for start in range(0, len(documents), reranker.batch_size):
        batch = documents[start : start + reranker.batch_size]
        scored.extend(
            (start + index, score) for index, score in _request(query, batch, settings, reranker, budget.deadline())
        )
    order = sorted(dict(scored).items(), key=lambda item: (-item[1], item[0]))
    ranked = {index: replace(top[index], score=score) for index, score in order}
    left = [hit for index, hit in enumerate(top) if index not in ranked]
    return [*ranked.values(), *left, *hits[RERANK_TOP:]]


def _request(
    query: str, documents: list[str], settings: Settings, reranker: Reranker, deadline: float
) -> list[tuple[int, float]]:
    import httpx

    try:
        key, _ = config.api_key(settings, reranker.url, reranker.url_source)
    except EmbeddingError as exc:  # a key that cannot be sent
        raise RerankError(str(exc)) from exc
    own = reranker.url_source == settings.provider
    if own and key is None:
        raise RerankError(f"no {settings.key_name} for {reranker.url}")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        response = transport.post(
            reranker.url, json=_payload(query, documents, reranker, own), headers=headers, deadline=deadline
        )
    except (Stalled, httpx.TimeoutException) as exc:
        raise RerankError(f"{reranker.url} did not answer within the search's {settings.timeout:g} s") from exc
    except httpx.TransportError as exc:
        raise RerankError(f"cannot reach {reranker.url}: {transport.reason(exc)}") from exc
    except TooLarge as exc:
        raise RerankError(f"{reranker.url} sent {exc}, more than a ranking of {len(documents)} takes") from exc
    if response.status_code != 200:
        raise RerankError(f"{reranker.url} answered HTTP {response.status_code}")
    try:
        return _parse(response.json(), len(documents))
    except ValueError as exc:
        raise RerankError(f"{reranker.url} sent an answer that is not a ranking") from exc


def _payload(query: str, documents: list[str], reranker: Reranker, own: bool) -> dict[str, Any]:
    if reranker.format == "tei" or (reranker.format == "auto" and not reranker.model):
        return {"query": query, "texts": documents}
    limit = "top_k" if reranker.format == "voyage" else "top_n"
    payload: dict[str, Any] = {"model": reranker.model, "query": query, "documents": documents, limit: len(documents)}
    if own:
        payload["truncation"] = True  # as the voyageai SDK sends it
    return payload


def _parse(answer: object, count: int) -> list[tuple[int, float]]:
    """(document index, score) pairs from any of the three answers; items out of range or malformed are
    skipped, as ChunkHound skips them. A NaN or infinite score is no ranking at all: ValueError."""
    if isinstance(answer, dict):
        answer = answer.get("results", answer.get("data"))
    if not isinstance(answer, list):
        raise ValueError("no results")
    found = []
    for item in answer:
        if not isinstance(item, dict):
            continue
        index, score = item.get("index"), item.get("relevance_score", item.get("score"))
        if isinstance(index, int) and 0 <= index < count and isinstance(score, (int, float)):
            if not math.isfinite(score):  # JSON's NaN, as Python writes it: it would sort anywhere
                raise ValueError("a score that is not a number")
            found.append((index, float(score)))
    return found
