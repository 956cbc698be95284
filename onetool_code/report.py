"""What ``status`` says about an index: the settings a search would use beside what the index itself holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onetool_code import index
from onetool_code.errors import ModelNotInIndexError
from onetool_code.settings import Settings


@dataclass(frozen=True)
class StatusReport:
    project_root: Path
    db_path: Path
    size_bytes: int
    age_seconds: float
    provider: str
    model: str
    reranker: str = "none"  # how hybrid searches are reranked (``settings.Reranker.describe``)
    locked_by: str | None = None  # why the index could not be read (snapshots off, a writer holds it)
    held_by: tuple[int, str] | None = None  # the process holding the index read-write now: PID, program
    indexed_root: str | None = None
    files: int = 0
    chunks: int = 0
    embedding_sets: tuple[index.EmbeddingSet, ...] = ()
    languages: tuple[tuple[str, int, int], ...] = ()
    notes: tuple[str, ...] = ()
    snapshot: index.SnapshotInfo | None = None  # None: snapshots are off (every search reads the index file)

    model_present: bool = False
    model_chosen_by: str | None = None  # the index named the model (its record, or its largest set), not the user


def gather(settings: Settings) -> StatusReport:
    """The index's facts (``index.IndexState.status``) with the settings a search would use."""
    facts = index.open(settings).status()
    return StatusReport(
        project_root=settings.project_root,
        db_path=settings.db_path,
        provider=settings.provider,
        reranker=settings.reranker.describe() if settings.reranker else "none",
        **_model(settings, facts.embedding_sets),
        **vars(facts),
    )


def _model(settings: Settings, sets: tuple[index.EmbeddingSet, ...]) -> dict[str, Any]:
    """The model a semantic search would compare with, by the search's own rule, and what chose it."""
    try:
        chosen = index.embedding_set(index.Layout(settings.db_path, sets), settings)
    except ModelNotInIndexError:
        return {"model": settings.model}
    by = None
    if settings.committed is not None:
        by = f"the index's record {settings.committed.path.name}"
    elif settings.model_from_index and chosen.model != settings.model:
        by = "the index's largest vector set"
    return {"model": chosen.model, "model_present": True, "model_chosen_by": by}
