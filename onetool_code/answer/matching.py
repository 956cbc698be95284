"""Where a query meets a hit's lines: ``match_lines`` and the match-aware 2-line preview.

The rules are the match-aware response spec's: tokens are ``names.match_tokens``, and a line matches when it
contains a token as a case-insensitive substring.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

MAX_MATCH_LINES = 8
PREVIEW_LINES = 2
PREVIEW_CHARS = 200


def _count(line: str, tokens: Sequence[str]) -> int:
    """How many distinct tokens the line contains: a line with both query words beats a line with one."""
    lowered = line.lower()
    return sum(1 for token in tokens if token in lowered)


def match_lines(lines: Sequence[str], tokens: Sequence[str], start_line: int) -> list[int]:
    """Absolute numbers of the lines that contain a token, ascending, at most ``MAX_MATCH_LINES``."""
    if not tokens:
        return []
    found: list[int] = []
    for offset, line in enumerate(lines):
        if _count(line, tokens):
            found.append(start_line + offset)
            if len(found) == MAX_MATCH_LINES:
                break
    return found


def preview(
    lines: Sequence[str], tokens: Sequence[str], count: int = PREVIEW_LINES, said: Collection[int] = ()
) -> list[int]:
    """Indexes (into ``lines``) of the preview lines (``count``: 1 or 2), in source order.

    With lexical matches: the line with the most token hits (earliest on a tie) plus the nearest other
    matching line, else its nearest non-empty neighbour (the one below wins a tie of distance, as the spec's
    example shows: a match on line 5 of 10 previews lines 5 and 6). Without:
    the first non-empty lines. Lines in ``said`` (what the result's own first line says already) are not shown.
    """
    non_empty = [i for i, line in enumerate(lines) if line.strip()]
    if any(i not in said for i in non_empty):
        non_empty = [i for i in non_empty if i not in said]
    scored = [(i, _count(lines[i], tokens)) for i in non_empty] if tokens else []
    matching = [(i, n) for i, n in scored if n > 0]
    if not matching:
        return non_empty[:count]
    best, _ = max(matching, key=lambda item: (item[1], -item[0]))
    if count == 1:
        return [best]
    others = [i for i, _ in matching if i != best] or [i for i in non_empty if i != best]
    if not others:
        return [best]
    second = min(others, key=lambda i: (abs(i - best), i < best))
    return sorted((best, second))


def preview_text(lines: Sequence[str], picked: Sequence[int]) -> str:
    """The picked lines joined, cut to ``PREVIEW_CHARS`` characters with ``...`` when longer."""
    text = "\n".join(lines[i] for i in picked)
    if len(text) > PREVIEW_CHARS:
        return text[: PREVIEW_CHARS - 3] + "..."
    return text
