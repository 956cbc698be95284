"""Chunks for files without a grammar: blank-line-separated paragraphs, merged up to the size budget.

Plain text becomes ``paragraph`` chunks (``paragraph_<line>``), as ChunkHound stores text; code in a language we
have no node table for, and config files, become ``block`` chunks (``block_line_<line>``): searchable, with
exact line numbers, if without definition boundaries.
"""

from __future__ import annotations

from onetool_code.project.chunks import MERGE_LIMIT, Chunk, make_chunk, split, weight


def line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte offsets of every line, the line break excluded; line n is at index n - 1."""
    spans: list[tuple[int, int]] = []
    start = 0
    for line in data.split(b"\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def paragraphs(data: bytes, spans: list[tuple[int, int]], first: int, last: int) -> list[tuple[int, int]]:
    """(first, last) line indexes of the blank-line-separated runs among lines ``first..last`` (inclusive)."""
    runs: list[tuple[int, int]] = []
    run_start: int | None = None
    for i in range(first, last + 1):
        blank = not data[spans[i][0] : spans[i][1]].strip()
        if blank and run_start is not None:
            runs.append((run_start, i - 1))
            run_start = None
        elif not blank and run_start is None:
            run_start = i
    if run_start is not None:
        runs.append((run_start, last))
    return runs


def merged_chunks(
    data: bytes, spans: list[tuple[int, int]], runs: list[tuple[int, int]], chunk_type: str, symbol_prefix: str
) -> list[Chunk]:
    """One chunk per group of consecutive runs that stays under the merge budget; oversized ones split."""
    chunks: list[Chunk] = []
    group: list[tuple[int, int]] = []
    size = 0
    for run in runs:
        run_size = weight(data[spans[run[0]][0] : spans[run[1]][1]].decode("utf-8", errors="replace"))
        if group and size + run_size > MERGE_LIMIT:
            chunks.extend(_emit(data, spans, group, chunk_type, symbol_prefix))
            group, size = [], 0
        group.append(run)
        size += run_size
    if group:
        chunks.extend(_emit(data, spans, group, chunk_type, symbol_prefix))
    return chunks


def _emit(
    data: bytes, spans: list[tuple[int, int]], group: list[tuple[int, int]], chunk_type: str, prefix: str
) -> list[Chunk]:
    first, last = group[0][0], group[-1][1]
    chunk = make_chunk(data, spans[first][0], spans[last][1], first + 1, chunk_type, f"{prefix}{first + 1}")
    return split(chunk) if chunk is not None else []


def chunk_text(data: bytes, language: str) -> list[Chunk]:
    """Paragraph chunks for ``text``, block chunks for everything else without a grammar."""
    spans = line_spans(data)
    runs = paragraphs(data, spans, 0, len(spans) - 1)
    if language == "text":
        return merged_chunks(data, spans, runs, "paragraph", "paragraph_")
    return merged_chunks(data, spans, runs, "block", "block_line_")
