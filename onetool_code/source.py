"""Project files read from disk for context: only inside the project root, each file once per call.

The index may be older than the working tree, so every read is checked against the indexed code: a file
that is gone or changed since indexing is reported, and the indexed code is shown instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 5_000_000


@dataclass(frozen=True)
class FileLines:
    """A file's lines (no line endings), or the reason there are none."""

    lines: tuple[str, ...] | None
    problem: str | None = None


class SourceFiles:
    def __init__(self, project_root: Path) -> None:
        self._root = project_root.resolve()
        self._cache: dict[str, FileLines] = {}

    def read(self, rel_path: str) -> FileLines:
        if rel_path not in self._cache:
            self._cache[rel_path] = self._read(rel_path)
        return self._cache[rel_path]

    def _read(self, rel_path: str) -> FileLines:
        target = (self._root / rel_path).resolve()
        if not target.is_relative_to(self._root):
            return FileLines(None, f"{rel_path} resolves outside the project root; not read")
        try:
            if target.stat().st_size > MAX_FILE_BYTES:
                return FileLines(None, f"{rel_path} is larger than {MAX_FILE_BYTES:,} bytes; not read")
            text = target.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return FileLines(None, f"{rel_path} no longer exists on disk; showing the indexed code")
        except OSError as exc:
            return FileLines(None, f"{rel_path} cannot be read ({exc.strerror or exc}); showing the indexed code")
        return FileLines(tuple(text.splitlines()))

    def matching(self, rel_path: str, start_line: int, end_line: int, codes: list[str]) -> FileLines:
        """The file's lines if lines ``start_line``..``end_line`` still hold every chunk text in ``codes``.

        ChunkHound's chunk text does not line up line by line with its range (measured on 6.1.0: the first
        line starts at the definition, losing its indentation and ``export``; pieces joined into one chunk
        lose the blank lines between them), so the test ignores white space: each chunk's text, with all
        white space removed, must appear in the range's text with all white space removed.
        """
        found = self.read(rel_path)
        if found.lines is None:
            return found
        window = "".join("".join(found.lines[start_line - 1 : end_line]).split())
        if end_line > len(found.lines) or not all("".join(code.split()) in window for code in codes):
            return FileLines(None, f"{rel_path} changed since indexing; showing the indexed code")
        return found

    def lines_of(
        self, rel_path: str, start_line: int, end_line: int, chunks: list[tuple[int, str]]
    ) -> tuple[list[str], str | None]:
        """Lines ``start_line``..``end_line`` as they are on disk while the file still holds the indexed
        chunks (``(start_line, code)`` pairs, best first), else rebuilt from the chunk texts, with a note why."""
        found = self.matching(rel_path, start_line, end_line, [code for _, code in chunks])
        if found.lines is not None:
            return list(found.lines[start_line - 1 : end_line]), None
        rebuilt: dict[int, str] = {}
        for chunk_start, code in chunks:
            for offset, text in enumerate(code.split("\n")):
                if start_line <= chunk_start + offset <= end_line:
                    rebuilt.setdefault(chunk_start + offset, text)
        return [rebuilt.get(n, "") for n in range(start_line, end_line + 1)], found.problem
