"""What ``status`` says about an index: the settings a search would use beside what the index itself holds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onetool_code import index
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

    @property
    def model_present(self) -> bool:
        return any((s.provider, s.model) == (self.provider, self.model) for s in self.embedding_sets)


def gather(settings: Settings) -> StatusReport:
    """The index's facts (``index.IndexState.status``) with the settings a search would use."""
    facts = index.open(settings).status()
    return StatusReport(
        project_root=settings.project_root,
        db_path=settings.db_path,
        provider=settings.provider,
        model=settings.model,
        reranker=settings.reranker.describe() if settings.reranker else "none",
        **vars(facts),
    )
