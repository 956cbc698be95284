"""The chunk record and ChunkHound's size rule: oversized chunks are halved into ``_part1``/``_part2`` recursively.

ChunkHound 6.1.0 caps a chunk at 1,200 non-whitespace characters and about 6,000 tokens (3 characters a token).
A chunk over either limit is cut in two at its middle line (or, for one long line, near its middle character),
and each half gets the suffix ``_part1`` or ``_part2`` on its symbol, again and again while a half is still too
big: hence ``run_command_part1_part2``. Readers strip the suffixes; we reproduce them so they have the same
thing to strip.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MAX_NON_WHITESPACE = 1200
MAX_TOKENS = 6000
CHARS_PER_TOKEN = 3
# Adjacent small items (imports, variables, comments, statements) are merged while they stay under this share
# of the budget, as ChunkHound's merge threshold (0.8) does.
MERGE_LIMIT = int(MAX_NON_WHITESPACE * 0.8)


@dataclass(frozen=True)
class Chunk:
    """One row of ``chunks``: lines 1-based and inclusive, bytes 0-based and end-exclusive, in the file's bytes."""

    chunk_type: str
    symbol: str
    code: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int


def weight(text: str) -> int:
    """The size ChunkHound's budget counts: non-whitespace characters."""
    return sum(map(len, text.split()))


def fits(text: str) -> bool:
    return weight(text) <= MAX_NON_WHITESPACE and len(text) // CHARS_PER_TOKEN <= MAX_TOKENS


def make_chunk(data: bytes, start: int, end: int, start_line: int, chunk_type: str, symbol: str) -> Chunk | None:
    """The chunk of ``data[start:end]`` (trailing line breaks dropped), or None when it holds only whitespace."""
    while end > start and data[end - 1] in b"\r\n":
        end -= 1
    code = data[start:end].decode("utf-8", errors="replace")
    if not code.strip():
        return None
    return Chunk(chunk_type, symbol, code, start_line, start_line + code.count("\n"), start, end)


def split(chunk: Chunk) -> list[Chunk]:
    """``chunk`` itself when it fits, else its halves (named ``_part1``/``_part2``), each split again as needed."""
    if fits(chunk.code):
        return [chunk]
    lines = chunk.code.split("\n")
    if len(lines) > 1:
        middle = len(lines) // 2
        first, second = "\n".join(lines[:middle]), "\n".join(lines[middle:])
        separator = 1
        second_line = chunk.start_line + middle
    else:
        cut = _middle_space(chunk.code)
        first, second = chunk.code[:cut], chunk.code[cut:]
        separator = 0
        second_line = chunk.start_line
    first_bytes = len(first.encode("utf-8", errors="replace"))
    parts: list[Chunk] = []
    for text, symbol, start_line, start_byte in (
        (first, f"{chunk.symbol}_part1", chunk.start_line, chunk.start_byte),
        (second, f"{chunk.symbol}_part2", second_line, chunk.start_byte + first_bytes + separator),
    ):
        if not text.strip():
            continue
        end_byte = start_byte + len(text.encode("utf-8", errors="replace"))
        part = Chunk(chunk.chunk_type, symbol, text, start_line, start_line + text.count("\n"), start_byte, end_byte)
        parts.extend(split(part))
    return parts


def _middle_space(text: str) -> int:
    """Where to cut one long line: the whitespace nearest its middle, else the middle itself."""
    middle = len(text) // 2
    left, right = text.rfind(" ", 0, middle), text.find(" ", middle)
    candidates = [i for i in (left, right) if i > 0]
    return min(candidates, key=lambda i: abs(i - middle)) if candidates else middle


def renamed(chunk: Chunk, symbol: str) -> Chunk:
    return replace(chunk, symbol=symbol)
