"""Pure functions over ranked hits: reciprocal-rank fusion for batches, and de-duplication.

Raw cosine scores of different queries are not comparable (one query may sit closer to everything), so a
batch is fused by rank: each query's best hits surface, whatever its score scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from onetool_code.hits import Hit

RRF_K = 60


def fuse(ranked_lists: Sequence[Sequence[Hit]], limit: int) -> list[Hit]:
    """Reciprocal-rank fusion (k=60) of one ranked list per query, capped at ``limit`` in total.

    A hit found by several queries (same path and line range) keeps its highest similarity and lists every
    query that found it (1-based). Ties in fused rank fall back to similarity, then path and start line.
    """
    fused: dict[tuple[str, int, int], float] = {}
    best: dict[tuple[str, int, int], Hit] = {}
    found_by: dict[tuple[str, int, int], set[int]] = {}
    for number, hits in enumerate(ranked_lists, start=1):
        for rank, hit in enumerate(dedupe(hits), start=1):
            fused[hit.key] = fused.get(hit.key, 0.0) + 1.0 / (RRF_K + rank)
            found_by.setdefault(hit.key, set()).add(number)
            if hit.key not in best or hit.score > best[hit.key].score:
                best[hit.key] = hit
    order = sorted(fused, key=lambda key: (-fused[key], -best[key].score, key[0], key[1]))
    return [
        replace(best[key], queries=tuple(sorted(found_by[key])), rank=rank) for rank, key in enumerate(order[:limit])
    ]


def page(hits: Sequence[Hit], start: int, end: int) -> list[Hit]:
    """Positions ``start``..``end - 1`` of a ranked list (from its top), less the duplicates of a hit ranked
    above them (on this page or an earlier one); each kept hit carries its position as ``rank``.

    Cutting first and de-duplicating after keeps pages disjoint and gapless: following ``next_offset = end``
    never shows a hit twice and never skips one.
    """
    seen: set[tuple[str, int, int]] = set()
    kept = []
    for position, hit in enumerate(hits[:end]):
        if hit.key in seen:
            continue
        seen.add(hit.key)
        if position >= start:
            kept.append(replace(hit, rank=position))
    return kept


def dedupe(hits: Sequence[Hit]) -> list[Hit]:
    """First occurrence of each path and line range wins (lists arrive best first)."""
    seen: set[tuple[str, int, int]] = set()
    unique = []
    for hit in hits:
        if hit.key not in seen:
            seen.add(hit.key)
            unique.append(hit)
    return unique
