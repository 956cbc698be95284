"""The queries' vectors for one search: one embeddings request, and the index's vectors of the configured model
to compare them with; for hybrid, why it answers by words only when it cannot embed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from onetool_code import advice, index
from onetool_code import settings as config
from onetool_code.errors import EmbeddingError, MissingKeyError, ModelNotInIndexError, OneToolCodeError
from onetool_code.request import Request
from onetool_code.search import embeddings, overlay_vectors, transport
from onetool_code.settings import Settings
from onetool_code.spans import note

EMBEDDING_MODES = ("semantic", "hybrid")  # the modes that embed the query


@dataclass(frozen=True)
class Semantic:
    """The query vectors of one call (one embeddings request) and the index's vectors they are compared with."""

    embedding_set: index.EmbeddingSet
    vectors: np.ndarray


class Shared:
    """The query vectors of one workspace call, by model: repositories whose indexes were built with the same
    model (provider, model, base URL, key, dimensions) share one embeddings request, and so do all the queries of
    a batch. A failed request is kept too, so the next repository of that model falls back without asking
    again."""

    def __init__(self) -> None:
        self._embedded: dict[tuple[object, ...], np.ndarray | OneToolCodeError] = {}

    def embed(self, queries: tuple[str, ...], settings: Settings, dims: int, network: transport.Budget) -> np.ndarray:
        key, _ = config.api_key(settings) if settings.unusable is None else (None, "")
        model = (
            settings.provider, settings.model, settings.base_url, key, dims, settings.output_dims,
            settings.client_side_truncation, settings.unusable, settings.query_input_type, queries,
        )  # fmt: skip
        if model not in self._embedded:
            try:
                self._embedded[model] = _embed(queries, settings, dims, network)
            except (MissingKeyError, EmbeddingError) as exc:
                self._embedded[model] = exc
        found = self._embedded[model]
        if isinstance(found, OneToolCodeError):
            raise found
        return found


def embedding_set(layout: index.Layout, settings: Settings, without: str | None = None) -> index.EmbeddingSet:
    """The vectors a search compares its query with, matched on provider, model and dims (one model can be stored
    at several dims); an error listing what the index holds otherwise. ``without``: what works, where the caller
    is, on an index that holds no vectors at all (a search in words, by default).

    ChunkHound 6.1's rule when nothing names a model: the index's own record (``settings.resolve`` read it), else
    the set with the most vectors. That set is taken here when it is the configured provider's; another provider's
    is named in the error, as choosing it would change where the key goes.
    """
    dims = settings.committed.dims if settings.committed else settings.output_dims
    matching = [
        s
        for s in layout.embedding_sets
        if (s.provider, s.model) == (settings.provider, settings.model) and dims in (None, s.dims)
    ]
    if matching:
        return max(matching, key=lambda s: s.count)
    largest = max(layout.embedding_sets, key=lambda s: s.count, default=None)
    chosen_by_count = settings.model_from_index and settings.committed is None
    if chosen_by_count and largest is not None and largest.provider == settings.provider:
        return largest
    wanted = f"{settings.provider}/{settings.model}" + (f" at {dims} dims" if dims else "")
    if largest is None:
        raise ModelNotInIndexError(
            f"The index {layout.db_path} holds no embeddings at all (indexed without them?), so it cannot be "
            f"searched for {wanted}. {without or 'Use ' + advice.option('mode', 'lexical')}, or index with an "
            "embedding provider."
        )
    held = "; ".join(s.describe() for s in layout.embedding_sets)
    raise ModelNotInIndexError(
        f"The index holds no vectors for {wanted}. It holds: {held}. Search with that model (model=..., "
        "provider=..., base_url=... or the project's .chunkhound.json), or re-index with the configured one."
    )


def warm_up(settings: Settings, request: Request) -> None:
    """Start importing the embeddings client while the index is read, when the mode embeds."""
    if request.mode in EMBEDDING_MODES:
        embeddings.warm_up(settings)


def embedded(
    settings: Settings,
    request: Request,
    view: index.View,
    network: transport.Budget,
    shared: Shared | None = None,
) -> tuple[Semantic | None, str | None]:
    """The queries' vectors from one embeddings request, when the mode ranks by meaning, and the configured
    model's vectors in the index to compare them with (paged in while the request is out); for hybrid, a notice
    instead when it cannot embed. ``shared``: a workspace's vectors of the models embedded so far."""
    if request.mode not in EMBEDDING_MODES:
        return None, None
    try:
        chosen = embedding_set(view.layout, settings)
        view.prefetch(chosen, exact=request.mode == "semantic")
        settings = replace(settings, model=chosen.model)  # the index's largest set when nothing named a model
        if shared is None:
            vectors = _embed(request.queries, settings, chosen.dims, network)
        else:
            vectors = shared.embed(request.queries, settings, chosen.dims, network)
    except (ModelNotInIndexError, MissingKeyError, EmbeddingError) as exc:
        if request.mode == "semantic":
            raise
        note(f"hybrid fell back to lexical: {exc}")
        return None, f"answered by words only (lexical): {_reason(exc, settings)}"
    return Semantic(chosen, vectors), None


def with_checkout(
    settings: Settings, view: index.View, semantic: Semantic, network: transport.Budget
) -> tuple[index.View, str | None]:
    """The view with the checkout's laid-over chunks embedded in the model the queries meet
    (``overlay_vectors``); a notice when they could not be."""
    return overlay_vectors.joined(settings, view, semantic.embedding_set, network)


def _embed(queries: tuple[str, ...], settings: Settings, dims: int, network: transport.Budget) -> np.ndarray:
    vectors = embeddings.embed(queries, settings, budget=network, input_type=settings.query_input_type)
    if vectors.shape[1] != dims:
        raise EmbeddingError(
            f"{settings.provider}/{settings.model} returned {vectors.shape[1]}-dimensional vectors, but the "
            f"index stores {dims} dimensions for it: the index was built with other settings."
        )
    return vectors


def _reason(exc: Exception, settings: Settings) -> str:
    """Why hybrid could not embed, in a few words (the whole message goes to the span)."""
    if isinstance(exc, ModelNotInIndexError):
        return f"the index holds no vectors for {settings.provider}/{settings.model}"
    if isinstance(exc, MissingKeyError):
        return f"no API key for the embeddings ({settings.key_name})"
    first = str(exc).split("\n")[0].split(". ")[0].rstrip(".")
    return first if len(first) <= 160 else first[:157] + "..."
