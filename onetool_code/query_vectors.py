"""The queries' vectors for one search: one embeddings request, and the index's vectors of the configured model
to compare them with; for hybrid, why it answers by words only when it cannot embed."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from onetool_code import embeddings, index, transport
from onetool_code import settings as config
from onetool_code.errors import EmbeddingError, MissingKeyError, ModelNotInIndexError, OneToolCodeError
from onetool_code.request import Request
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
            settings.client_side_truncation, settings.unusable, queries,
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


def warm_up(settings: Settings, request: Request) -> None:
    """Start importing the embeddings client while the index is read, when the mode embeds."""
    if request.mode in EMBEDDING_MODES:
        embeddings.warm_up(settings)


def embedded(
    settings: Settings,
    request: Request,
    layout: index.Layout,
    network: transport.Budget,
    shared: Shared | None = None,
) -> tuple[Semantic | None, str | None]:
    """The queries' vectors from one embeddings request, when the mode ranks by meaning, and the configured
    model's vectors in the index to compare them with; for hybrid, a notice instead when it cannot embed.
    ``shared``: a workspace's vectors of the models embedded so far."""
    if request.mode not in EMBEDDING_MODES:
        return None, None
    try:
        chosen = index.embedding_set(layout, settings)
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


def _embed(queries: tuple[str, ...], settings: Settings, dims: int, network: transport.Budget) -> np.ndarray:
    vectors = embeddings.embed(queries, settings, budget=network)
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
