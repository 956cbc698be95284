"""Markdown chunks: a ``header_<level>`` chunk per section, plus its code blocks and tables on their own.

A section runs from its heading to the next heading of any level, so a hit lands on the part of a document that
talks about the query, titled. Fenced code blocks (``code_block``) and tables (``table``) are also stored alone,
as a class's methods are, so ``chunk_type="code_block"`` finds examples. Text before the first heading becomes
``paragraph`` chunks. Symbols follow ChunkHound's Markdown mapping: a heading's text with every character that is
not a letter or digit turned into ``_`` (fallback ``heading_<line>``), ``code_block_<lang>`` or
``code_block_<line>``, ``table_<line>``, ``paragraph_<line>``. A line-based reader rather than tree-sitter: the
four block kinds need no more, and it never loses text to a parse error.
"""

from __future__ import annotations

import re

from onetool_code.project.chunks import Chunk, make_chunk, split
from onetool_code.project.text import line_spans, merged_chunks, paragraphs

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)")
_TABLE_DELIMITER = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")


def chunk_markdown(data: bytes) -> list[Chunk]:
    """All chunks of one Markdown file, in line order."""
    spans = line_spans(data)
    lines = [data[s:e].decode("utf-8", errors="replace").rstrip("\r") for s, e in spans]
    headings: list[tuple[int, int, str]] = []  # (first line index, level, text); setext headings span 2 lines
    extras: list[Chunk] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, i, fence.group(1))
            lang = re.sub(r"[^A-Za-z0-9_+-]", "", fence.group(2))
            symbol = f"code_block_{lang}" if lang else f"code_block_{i + 1}"
            extras.extend(_block(data, spans, i, end, "code_block", symbol))
            i = end + 1
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((i, len(atx.group(1)), (atx.group(2) or "").strip()))
            i += 1
            continue
        if i + 1 < len(lines) and line.strip() and _SETEXT.match(lines[i + 1]) and not _is_table_row(line):
            level = 1 if lines[i + 1].strip().startswith("=") else 2
            headings.append((i, level, line.strip()))
            i += 2
            continue
        if _is_table_row(line) and i + 1 < len(lines) and _TABLE_DELIMITER.match(lines[i + 1]):
            end = i + 1
            while end + 1 < len(lines) and lines[end + 1].strip() and "|" in lines[end + 1]:
                end += 1
            extras.extend(_block(data, spans, i, end, "table", f"table_{i + 1}"))
            i = end + 1
            continue
        i += 1
    chunks: list[Chunk] = []
    first_heading = headings[0][0] if headings else len(lines)
    if first_heading > 0:
        runs = paragraphs(data, spans, 0, first_heading - 1)
        chunks.extend(merged_chunks(data, spans, runs, "paragraph", "paragraph_"))
    for n, (start, level, text) in enumerate(headings):
        end = headings[n + 1][0] - 1 if n + 1 < len(headings) else len(lines) - 1
        chunks.extend(_block(data, spans, start, end, f"header_{level}", _heading_symbol(text, start + 1)))
    return sorted(chunks + extras, key=lambda c: (c.start_line, -c.end_line))


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing the fence opened at ``start`` (the last line when it is never closed)."""
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
    for j in range(start + 1, len(lines)):
        if closing.match(lines[j]):
            return j
    return len(lines) - 1


def _is_table_row(line: str) -> bool:
    return "|" in line and bool(line.strip())


def _heading_symbol(text: str, line: int) -> str:
    cleaned = re.sub(r"_+", "_", "".join(c if c.isalnum() else "_" for c in text)).strip("_")
    return cleaned or f"heading_{line}"


def _block(
    data: bytes, spans: list[tuple[int, int]], first: int, last: int, chunk_type: str, symbol: str
) -> list[Chunk]:
    chunk = make_chunk(data, spans[first][0], spans[last][1], first + 1, chunk_type, symbol)
    return split(chunk) if chunk is not None else []
