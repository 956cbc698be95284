"""Where each hit is in its file now, decided as ChunkHound decides whether a file changed.

The index's ``files`` row holds the size, mtime and xxh3-64 ``content_hash`` of the bytes ChunkHound indexed.
Same bytes: ChunkHound's range is right, mapped onto the file's own line numbers (``FileText.from_chunkhound``),
and nothing is said. We read the file anyway to show it, so its hash decides; size and mtime decide only for a
row without a hash (indexes written before ChunkHound stored one).

Other bytes (or no state to compare): the chunk is looked for in the file (``locate``), and only then is
something said: "moved" when every line of it is there at other line numbers, "changed" when some of its lines
are gone, and the indexed code is shown (under ChunkHound's range) when too little of it is left. A file that is
gone keeps ChunkHound's range and says so.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from onetool_code.hits import Hit
from onetool_code.project.source import FileText, SourceFiles, Unread

MTIME_EPSILON = 0.01  # ChunkHound's indexing.mtime_epsilon_seconds
# A chunk counts as found when at least this share of its distinct lines is in the window located for it.
FOUND_SHARE = 0.5
# Lines that may have been inserted between two matched stretches of one chunk in an edited file.
MAX_INSERTED = 40
# The first search is this many lines around where the index puts the chunk (then the whole file): a line
# that occurs twice in a file is found where the chunk was.
NEAR = 200


MOVED, EDITED, LOST = 1, 2, 3  # how far a placement departs from the index, for choosing a merged note


@dataclass(frozen=True)
class Placement:
    """A hit's range, 1-based and inclusive; ``in_file`` when it holds the file's own lines, else it is
    ChunkHound's range and only the indexed code can be shown. ``note`` says what changed, if anything, and
    ``change`` how much (0, ``MOVED``, ``EDITED`` or ``LOST``): of hits shown as one, the biggest change is told."""

    start_line: int
    end_line: int
    in_file: bool
    note: str | None = None
    change: int = 0


@dataclass(frozen=True)
class Located:
    """Where ``locate`` found a chunk: file lines ``start_line``..``end_line``, and how many of the chunk's
    ``total`` distinct lines are not in that range."""

    start_line: int
    end_line: int
    missing: int
    total: int


def place(hit: Hit, sources: SourceFiles) -> Placement:
    text = sources.read(hit.file_path)
    if isinstance(text, Unread):
        return Placement(hit.start_line, hit.end_line, False, f"{text.reason}; showing the indexed code", LOST)
    start, end = file_range(hit, text)
    if _unchanged(hit, text):
        return Placement(start, end, True)
    for first, last in dict.fromkeys(((start, end), (hit.start_line, hit.end_line))):  # mapped, then as stored
        if _holds(text.lines, first, last, hit.code):
            return Placement(first, last, True)
    found = locate(hit.code, text.lines, start)
    if found is None or found.total - found.missing < FOUND_SHARE * found.total:
        note = "changed since indexing, no longer in the file; showing the indexed code"
        return Placement(hit.start_line, hit.end_line, False, note, LOST)
    if found.missing:
        note = f"changed since indexing: {found.missing} of {found.total} indexed lines differ"
        return Placement(found.start_line, found.end_line, True, note, EDITED)
    if (found.start_line, found.end_line) != _without_blank_edges(text.lines, start, end):
        note = f"moved since indexing (indexed at {start}-{end})"
        return Placement(found.start_line, found.end_line, True, note, MOVED)
    return Placement(start, end, True)


def _holds(lines: Sequence[str], start: int, end: int, code: str) -> bool:
    """The file still has the chunk's lines at its range (blank lines and indentation aside): the chunk did not
    move, even where its text also appears elsewhere (a repeated line, a copied function)."""
    inside = [line.strip() for line in lines[max(start, 1) - 1 : end] if line.strip()]
    return bool(inside) and inside == [line.strip() for line in code.split("\n") if line.strip()]


def _without_blank_edges(lines: Sequence[str], start: int, end: int) -> tuple[int, int]:
    """A range less its blank first and last lines: ``locate`` matches non-blank lines only, so a chunk that
    ends in a blank line is found one line short of its range without having moved."""
    while start < end and start <= len(lines) and not lines[start - 1].strip():
        start += 1
    while end > start and end <= len(lines) and not lines[end - 1].strip():
        end -= 1
    return start, end


def _unchanged(hit: Hit, text: FileText) -> bool:
    state = hit.file
    if state is None:
        return False
    if state.content_hash:
        return state.content_hash == text.digest
    if state.size is None or state.mtime is None:
        return False
    return state.size == text.size and abs(state.mtime - text.mtime) <= MTIME_EPSILON


def file_range(hit: Hit, text: FileText) -> tuple[int, int]:
    """The hit's range in the file's own numbers.

    ChunkHound's numbers shift in a file that starts with blank lines; our indexer's (and any index that
    counted the file as it is) do not, and both leave the same kind of row. In such a file the chunk's first line
    tells them apart: it is in the file's line at the start of the right range.
    """
    start, end = text.from_chunkhound(hit.start_line), text.from_chunkhound(hit.end_line)
    if start == hit.start_line or _starts_at(hit.code, text.lines, start):
        return start, end
    if _starts_at(hit.code, text.lines, hit.start_line):
        return hit.start_line, min(hit.end_line, len(text.lines))
    return start, end


def _starts_at(code: str, lines: Sequence[str], line: int) -> bool:
    """Whether the chunk's first non-blank line is in file line ``line`` (a chunk's first line may lack the
    indentation and an ``export`` of the file's line)."""
    first = next((piece.strip() for piece in code.split("\n") if piece.strip()), "")
    return 1 <= line <= len(lines) and bool(first) and first in lines[line - 1]


def locate(code: str, lines: Sequence[str], near: int) -> Located | None:
    """Where the chunk ``code`` is in ``lines`` now, or None when none of it is there.

    Tolerant of how ChunkHound builds chunk text (measured on 6.1.0): pieces joined into one chunk lose the lines
    between them and can overlap, so lines repeat (a joined chunk of httpx's ``_client.py`` holds ``proxy=proxy,``
    and ``)`` twice); a first line lacks its indentation and ``export``. So lines are compared stripped, a chunk
    line may match the end of a file line, the alignment (``difflib``) skips what it cannot match, and the
    chunk's distinct lines are counted, not its lines in order.
    """
    wanted = [piece for piece in (line.strip() for line in code.split("\n")) if piece]
    if not wanted:
        return None
    stripped = [line.strip() for line in lines]
    keys = _keys(wanted, stripped, near)
    span = len(wanted)
    around = _align(keys, stripped, max(0, near - 1 - NEAR), min(len(stripped), near - 1 + span + NEAR))
    if around is not None and around.missing == 0:
        return around
    anywhere = _align(keys, stripped, 0, len(stripped))
    if around is None or (anywhere is not None and anywhere.missing < around.missing):
        return anywhere
    return around


def _keys(wanted: list[str], stripped: list[str], near: int) -> list[str]:
    """Each chunk line as the file line it stands for: itself, or, when no file line equals it, the file line
    nearest ``near`` that ends with it after a space (``export class Inner {`` for ``class Inner {``)."""
    present = set(stripped)
    keys = []
    for piece in wanted:
        if piece not in present:
            suffix = " " + piece
            ends = [i for i, line in enumerate(stripped) if line.endswith(suffix)]
            if ends:
                piece = stripped[min(ends, key=lambda i: abs(i + 1 - near))]
        keys.append(piece)
    return keys


def _align(keys: list[str], stripped: list[str], low: int, high: int) -> Located | None:
    """The chunk aligned with ``stripped[low:high]``: the longest matching stretch and the stretches close to it,
    widened over chunk lines at either end that the file no longer has (an edited first or last line)."""
    matcher = difflib.SequenceMatcher(None, keys, stripped[low:high], autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size]
    if not blocks:
        return None
    anchor = max(range(len(blocks)), key=lambda i: blocks[i].size)
    first = last = anchor
    while first > 0 and _close(blocks[first - 1], blocks[first]):
        first -= 1
    while last + 1 < len(blocks) and _close(blocks[last], blocks[last + 1]):
        last += 1
    start = low + blocks[first].b
    end = low + blocks[last].b + blocks[last].size - 1
    inside = set(stripped[start : end + 1])
    before = sum(1 for key in keys[: blocks[first].a] if key not in inside)
    after = sum(1 for key in keys[blocks[last].a + blocks[last].size :] if key not in inside)
    start, end = _widen(stripped, start, -before), _widen(stripped, end, after)
    distinct = set(keys)
    return Located(start + 1, end + 1, len(distinct - set(stripped[start : end + 1])), len(distinct))


def _close(left: difflib.Match, right: difflib.Match) -> bool:
    gap_chunk = right.a - (left.a + left.size)
    gap_file = right.b - (left.b + left.size)
    return gap_file <= gap_chunk + MAX_INSERTED


def _widen(stripped: list[str], index: int, count: int) -> int:
    """``index`` moved over ``count`` non-blank lines (up when negative), within the file."""
    step = -1 if count < 0 else 1
    remaining = abs(count)
    while remaining and 0 <= index + step < len(stripped):
        index += step
        remaining -= bool(stripped[index])
    return index
