"""Project files read as ChunkHound read them: only inside the project root, each file once per call.

ChunkHound 6.1.0 reads a file as UTF-8, falling back to Latin-1 when that fails (``UniversalParser.parse_file``),
in universal-newline mode (``\\r\\n`` and a lone ``\\r`` both end a line), strips leading and trailing
whitespace (``normalize_content``), and numbers lines from what is left, so in a file that starts with blank
lines its line 1 is the first non-blank one. A file's own lines are what an agent opens: split at ``\\n`` only
(as tree-sitter, editors and ``sed -n`` count; never ``str.splitlines``, which also breaks at form feeds,
``\\x1c``-``\\x1e``, ``\\x85`` and Unicode separators), with a trailing ``\\r`` dropped. ``FileText.from_chunkhound``
maps ChunkHound's numbers onto the file's.
"""

from __future__ import annotations

import bisect
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from onetool_code import published, settings
from onetool_code.reading import read_regular

if TYPE_CHECKING:
    from onetool_code.project.definitions import Definition

MAX_FILE_BYTES = 5_000_000
OUTLINES_KEPT = 256
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LONE_CR = re.compile(r"\r(?!\n)")


@dataclass(frozen=True)
class FileText:
    """A file as it is on disk now: its lines, and what ChunkHound compares with the index to tell a change."""

    lines: tuple[str, ...]
    size: int
    mtime: float
    digest: str  # xxh3-64 of the bytes, as ``files.content_hash``
    shift: int  # ChunkHound's line n is the file's line n + shift (leading blank lines it stripped) ...
    chunkhound_lines: tuple[int, ...] | None  # ... unless a lone "\r" split lines: then the file line of each

    def from_chunkhound(self, line: int) -> int:
        """The file's own number of ChunkHound's line ``line`` (clamped to the file)."""
        index = line + self.shift
        if self.chunkhound_lines is not None:
            index = self.chunkhound_lines[min(max(index, 1), len(self.chunkhound_lines)) - 1]
        return min(max(index, 1), max(len(self.lines), 1))

    def to_chunkhound(self, line: int) -> int:
        """ChunkHound's number of the file's line ``line``: the inverse of ``from_chunkhound`` (a file line that a
        lone ``\r`` split is its first part), at least 1."""
        index = line
        if self.chunkhound_lines is not None:
            index = bisect.bisect_left(self.chunkhound_lines, line) + 1
        return max(index - self.shift, 1)


def split_lines(text: str) -> tuple[str, ...]:
    """A text's lines as a file's line numbers count them: split at ``\\n`` only, a trailing ``\\r`` dropped, no
    empty last line after a final ``\\n``."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return tuple(line.removesuffix("\r") for line in lines)


def decode(data: bytes) -> str:
    """The text ChunkHound made of these bytes: UTF-8, else Latin-1 (which decodes any byte, so its later
    fallbacks never run)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def file_text(data: bytes, mtime: float) -> FileText:
    text = decode(data)
    normalized = _LINE_BREAK.sub("\n", text)
    shift = normalized[: len(normalized) - len(normalized.lstrip())].count("\n")
    chunkhound_lines = None
    if _LONE_CR.search(text):
        # ChunkHound's line k starts after its (k-1)th break of any kind; the file's counts "\n" only.
        numbers, line = [1], 1
        for brk in _LINE_BREAK.finditer(text):
            line += "\n" in brk.group()
            numbers.append(line)
        chunkhound_lines = tuple(numbers)
    lines = split_lines(text.removeprefix("\ufeff"))  # a BOM is part of no line an agent reads
    return FileText(lines, len(data), mtime, xxhash.xxh3_64_hexdigest(data), shift, chunkhound_lines)


# (xxh3 digest, size, language) -> the file's definitions; insertion order is age. The MCP server answers calls
# on threads of their own: the lock keeps one call's eviction from iterating while another inserts.
_outlines: dict[tuple[str, int, str], list[Definition]] = {}
_outlines_lock = threading.Lock()


class SourceFiles:
    """The project's files for one call: each read once, and never one outside the project root."""

    def __init__(self, project_root: Path) -> None:
        self._root = project_root.resolve()
        self._cache: dict[str, FileText | Unread] = {}
        # A published index fetched to this machine: no checkout here, the stored code is all there is.
        self._away = published.fetched(self._root, settings.cache_root()) is not None

    def read(self, rel_path: str) -> FileText | Unread:
        """The file now, or why it cannot be shown."""
        if rel_path not in self._cache:
            self._cache[rel_path] = self._read(rel_path)
        return self._cache[rel_path]

    def holds(self, rel_path: str, needle: bytes) -> bool:
        """Whether the file's bytes hold ``needle``: a scan of many files decodes only those that do (the bytes
        are read again by ``read``, which keeps what it decodes)."""
        found = self._bytes(rel_path)
        return not isinstance(found, Unread) and needle in found[0]

    def _read(self, rel_path: str) -> FileText | Unread:
        found = self._bytes(rel_path)
        return found if isinstance(found, Unread) else file_text(*found)

    def _bytes(self, rel_path: str) -> tuple[bytes, float] | Unread:
        target = (self._root / rel_path).resolve()
        if not target.is_relative_to(self._root):
            return Unread("resolves outside the project root; not read")
        try:
            data = read_regular(target, MAX_FILE_BYTES)  # a FIFO in a file's place must not block the search
            mtime = target.stat().st_mtime
        except FileNotFoundError:
            if self._away:
                return Unread("not on this machine (a published index)", gone=True)
            return Unread("deleted since indexing", gone=True)
        except OSError as exc:
            return Unread(f"{exc.strerror}; not read" if exc.strerror else f"cannot be read ({exc})")
        return data, mtime

    def outline(self, rel_path: str, language: str) -> list[Definition]:
        """The file's definitions now (``definitions.outline``); none when it cannot be read. A parse of a big file
        costs tens of milliseconds, so the last ``OUTLINES_KEPT`` are kept for the process, by content."""
        text = self.read(rel_path)
        if isinstance(text, Unread):
            return []
        key = (text.digest, text.size, language)
        found = _outlines.get(key)
        if found is None:
            from onetool_code.project.definitions import outline

            found = outline("\n".join(text.lines), language)  # parsed outside the lock: threads parse at once
            with _outlines_lock:
                _outlines[key] = found
                while len(_outlines) > OUTLINES_KEPT:
                    del _outlines[next(iter(_outlines))]
        return found

    def window(self, rel_path: str, start_line: int, end_line: int) -> list[str]:
        """The file's lines ``start_line``..``end_line`` (clamped to the file); none when it cannot be read."""
        text = self.read(rel_path)
        return [] if isinstance(text, Unread) else list(text.lines[max(start_line, 1) - 1 : end_line])


@dataclass(frozen=True)
class Unread:
    """Why a file's lines cannot be shown; ``gone`` when it no longer exists."""

    reason: str
    gone: bool = False
