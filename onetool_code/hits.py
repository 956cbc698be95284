"""The records a search (and ``usages``) produces and every later stage (ranking, merging, formatting) consumes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FileState:
    """What the index's ``files`` row says of a file when it was indexed: ChunkHound compares these with the file
    on disk to decide whether it changed (size and mtime first, then the xxh3-64 hash of its bytes). Each is None
    when the row or the column lacks it (indexes written before ChunkHound added ``content_hash``)."""

    size: int | None = None
    mtime: float | None = None  # seconds since the epoch
    content_hash: str | None = None

    def saved(self) -> list[object]:
        """As a JSON list (``dataclasses.asdict`` took 2 s over a big index's 4,000 files)."""
        return [self.size, self.mtime, self.content_hash]


@dataclass(frozen=True)
class FileRow:
    """One ``files`` row as the snapshot build reads it (``index.database.file_rows``)."""

    file_id: int
    path: str
    lower_path: str  # DuckDB's lower(path), as the filters compare it
    language: str | None
    chunks: int
    state: FileState

    def saved(self) -> list[object]:
        return [self.file_id, self.path, self.lower_path, self.language, self.chunks, *self.state.saved()]

    @classmethod
    def loaded(cls, saved: list[Any]) -> FileRow:
        file_id, path, lower_path, language, chunks, *state = saved
        return cls(file_id, path, lower_path, language, chunks, FileState(*state))


@dataclass(frozen=True)
class Hit:
    """One ranked chunk. Lines are 1-based and inclusive; ``score`` is cosine similarity or the lexical score.

    ``queries`` holds the 1-based numbers of the batch queries that found the hit (empty for ``search``);
    ``rank`` is its 0-based place in the whole ranked list the page was cut from; ``file`` the file's row state
    (``index.database.with_file_states``), None until it is attached; ``defines`` the name the query spells that the
    chunk was found defining (``lookup``): the result is then shown as that definition, whole.
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
    file: FileState | None = None
    defines: str = ""

    @property
    def key(self) -> tuple[str, int, int]:
        """Identity for de-duplication: the same path and line range is the same hit."""
        return (self.file_path, self.start_line, self.end_line)


KINDS = ("code", "tests", "docs")  # the order ``usages`` lists files in


@dataclass(frozen=True)
class FileUses:
    """The lines of one file that use the name: (line number, the line's text), ascending."""

    path: str
    kind: str  # one of KINDS
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class Usages:
    """What ``usages`` found: files in KINDS order (then by path), and the definitions it left out."""

    name: str
    files: tuple[FileUses, ...]
    definitions: tuple[tuple[str, int], ...]

    @property
    def count(self) -> int:
        return sum(len(f.lines) for f in self.files)
