"""What ``status`` says about an index: the settings a search would use beside what the index itself holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onetool_code import index, published
from onetool_code.errors import ModelNotInIndexError
from onetool_code.search import query_vectors
from onetool_code.settings import Settings, cache_root


@dataclass(frozen=True)
class StatusReport:
    """An index's own facts, and what a search of it would use: the project, index file, provider, reranker and the
    model the search's own rule picks."""

    facts: index.Facts
    project_root: Path
    db_path: Path
    provider: str
    model: str
    reranker: str = "none"  # how hybrid searches are reranked (``settings.Reranker.describe``)
    model_present: bool = False
    model_chosen_by: str | None = None  # the index named the model (its record, or its largest set), not the user
    query_input_type: str | None = None  # the user's type for the queries (``query_input_type``); None: ChunkHound's
    published: published.Fetched | None = None  # the store version this machine fetched, for a published index
    store_notice: str | None = None  # why that version may not be the newest (its store unreachable)
    checkout: index.CheckoutFacts | None = None  # how the checkout differs from the index (None: no checkout read)


def gather(settings: Settings) -> StatusReport:
    """The index's facts (``index.IndexState.status``) with the settings a search would use."""
    state = index.open(settings)
    facts = state.status()
    return StatusReport(
        checkout=None if facts.locked_by else state.checkout(),
        project_root=settings.project_root,
        db_path=settings.db_path,
        provider=settings.provider,
        reranker=settings.reranker.describe() if settings.reranker else "none",
        query_input_type=settings.query_input_type,
        facts=facts,
        published=published.fetched(settings.db_path, cache_root()),
        store_notice=published.notice(settings.db_path),
        **_model(settings, facts.embedding_sets),
    )


def _model(settings: Settings, sets: tuple[index.EmbeddingSet, ...]) -> dict[str, Any]:
    """The model a semantic search would compare with, by the search's own rule, and what chose it."""
    try:
        chosen = query_vectors.embedding_set(index.Layout(settings.db_path, sets), settings)
    except ModelNotInIndexError:
        return {"model": settings.model}
    by = None
    if settings.committed is not None:
        by = f"the index's record {settings.committed.path.name}"
    elif settings.model_from_index and chosen.model != settings.model:
        by = "the index's largest vector set"
    return {"model": chosen.model, "model_present": True, "model_chosen_by": by}
