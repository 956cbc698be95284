"""Project files read from disk for context: only inside the project root, each file once per call.

The index may be older than the working tree, and ChunkHound's line numbers are not always the file's, so a
hit is located in the file before its lines are shown: a file that is gone or no longer holds the chunk is
reported, and the indexed code is shown instead.
"""

from __future__ import annotations

from pathlib import Path

MAX_FILE_BYTES = 5_000_000
MAX_SHIFT = 20


Lines = tuple[str, ...]


class SourceFiles:
    def __init__(self, project_root: Path) -> None:
        self._root = project_root.resolve()
        self._cache: dict[str, Lines | str] = {}

    def read(self, rel_path: str) -> Lines | str:
        """The file's lines (no line endings), or why there are none."""
        if rel_path not in self._cache:
            self._cache[rel_path] = self._read(rel_path)
        return self._cache[rel_path]

    def _read(self, rel_path: str) -> Lines | str:
        target = (self._root / rel_path).resolve()
        if not target.is_relative_to(self._root):
            return f"{rel_path} resolves outside the project root; not read"
        try:
            if target.stat().st_size > MAX_FILE_BYTES:
                return f"{rel_path} is larger than {MAX_FILE_BYTES:,} bytes; not read"
            text = target.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return f"{rel_path} no longer exists on disk; showing the indexed code"
        except OSError as exc:
            return f"{rel_path} cannot be read ({exc.strerror or exc}); showing the indexed code"
        return tuple(text.splitlines())

    def locate(self, rel_path: str, start_line: int, end_line: int, code: str) -> tuple[int, int] | str:
        """Where the indexed chunk is in the file now: its range, shifted by the smallest offset (up to
        ``MAX_SHIFT`` lines) at which the file holds the chunk's text; or why it cannot be found.

        ChunkHound's chunk text does not line up line by line with its range (measured on 6.1.0: the first
        line starts at the definition, losing its indentation and ``export``; pieces joined into one chunk
        lose the blank lines between them; a Markdown paragraph skips the headings inside its range), and
        in a file that starts with blank lines its line numbers count from the first non-blank line. So the
        test is loose but still catches an edited file: the chunk's non-blank lines, stripped, must appear in
        order, each inside a line of the range.
        """
        lines = self.read(rel_path)
        if isinstance(lines, str):
            return lines
        span = end_line - start_line
        for shift in sorted(range(-MAX_SHIFT, MAX_SHIFT + 1), key=abs):
            first = start_line + shift
            if first >= 1 and first + span <= len(lines) and _holds(lines[first - 1 : first + span], code):
                return first, first + span
        return f"{rel_path} changed since indexing; showing the indexed code"

    def window(self, rel_path: str, start_line: int, end_line: int) -> list[str]:
        """Lines ``start_line``..``end_line`` of a file that ``locate`` has found (clamped to the file)."""
        lines = self.read(rel_path)
        return [] if isinstance(lines, str) else list(lines[max(start_line, 1) - 1 : end_line])


def _holds(window: Lines, code: str) -> bool:
    remaining = (line.strip() for line in window)
    return all(any(piece in line for line in remaining) for piece in (p.strip() for p in code.split("\n")) if piece)
