"""The record a search produces and every later stage (ranking, merging, formatting) consumes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Hit:
    """One ranked chunk. Lines are 1-based and inclusive; ``score`` is cosine similarity or the lexical score.

    ``queries`` holds the 1-based numbers of the batch queries that found the hit (empty for ``search``);
    ``rank`` is its 0-based place in the whole ranked list the page was cut from.
    """

    chunk_id: int
    file_path: str
    language: str
    chunk_type: str
    symbol: str
    code: str
    start_line: int
    end_line: int
    score: float
    queries: tuple[int, ...] = ()
    rank: int = 0

    @property
    def key(self) -> tuple[str, int, int]:
        """Identity for de-duplication: the same path and line range is the same hit."""
        return (self.file_path, self.start_line, self.end_line)
