"""Hits placed as the definitions they stand for, and merged so that no line of an answer is shown twice.

ChunkHound stores a class and the methods inside it as separate chunks and cuts a long definition into pieces:
hits of one file whose line ranges overlap, nest or touch (a gap of at most one line) merge into one result, save
that a definition shown whole keeps its own lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from onetool_code.hits import Hit
from onetool_code.names import bare, is_piece
from onetool_code.project.definitions import Definition, enclosing
from onetool_code.project.placement import Placement, place
from onetool_code.project.source import SourceFiles

MAX_WHOLE = 300  # lines of a cut definition shown whole instead of the piece that matched
# Lines next to a definition shown whole that join its result (its comment, its decorator) rather than make one
# of their own.
ADJOIN = 5
_PIECE_TYPES = frozenset({"function", "method", "class"})


@dataclass(frozen=True)
class Placed:
    """A hit and where it is in its file now; ``whole``: the definition it stands for (``whole_definition``)."""

    hit: Hit
    placement: Placement
    whole: Definition | None = None

    @property
    def start_line(self) -> int:
        return self.placement.start_line

    @property
    def end_line(self) -> int:
        return self.placement.end_line


def whole_definition(hit: Hit, sources: SourceFiles) -> Placed:
    """The hit placed as the definition it stands for, from the file's own syntax: the one it was found
    defining (``Hit.defines``: ChunkHound may have put it into a neighbour's chunk), or the one it is a piece of
    (``bulk_create_part1_part2``), up to ``MAX_WHOLE`` lines: the part of a 4,700-line class that matched stays
    that part, not one result that swallows the page. Otherwise, or when the file no longer holds it, the hit
    where it is."""
    placement = place(hit, sources)
    piece = is_piece(hit.symbol) and hit.chunk_type in _PIECE_TYPES
    if not placement.in_file or not (hit.defines or piece):
        return Placed(hit, placement)
    name = hit.defines or bare(hit.symbol)
    found = enclosing(sources.outline(hit.file_path, hit.language), name, placement.start_line, placement.end_line)
    if found is None or found.end_line - found.start_line >= MAX_WHOLE:
        return Placed(hit, placement)
    return Placed(hit, replace(placement, start_line=found.start_line, end_line=found.end_line), found)


def merge(placed: Sequence[Placed]) -> list[list[Placed]]:
    """Groups of hits to show as one, in the rank order of each group's best hit: no line is shown twice, and
    no two groups of a file overlap or touch unless joining them would make a result of more than ``MAX_WHOLE``
    lines (the windows of a 4,700-line class are places of their own, not one result).

    A definition shown whole (``Placed.whole``) anchors a group: every hit of its file that overlaps it or
    touches it (a gap of at most one line) joins it, and so does a definition it meets. Past ``MAX_WHOLE``
    lines, a hit that meets such a group gives it only the lines they share and keeps the rest as a place of its
    own, so ``QuerySet.bulk_create`` is not swallowed by a window of its class and no line of the window is
    lost. The rest, within a file, sorted by start line, merge on the same terms. Hits the file could not place
    keep ChunkHound's ranges, which do not count the file's lines: they merge only among themselves.
    """
    rank = {id(p): i for i, p in enumerate(placed)}
    anchored: list[list[Placed]] = []
    loose: list[Placed] = []
    waiting: list[Placed] = []
    # Definitions shown whole first, best first: one that meets a better one joins it, as any hit does.
    for p in sorted(placed, key=lambda p: (p.whole is None, rank[id(p)])):
        if _attach(p, anchored, loose, rank):
            continue
        if p.whole is not None:
            anchored.append([p])
        else:
            waiting.append(p)
    # A group grown by a later hit may now meet one that was waiting; and a stretch a hit kept as a place of its
    # own may overlap a definition anchored after it: its lines there are shown there, not twice.
    while True:
        attached = {id(p) for p in waiting if _attach(p, anchored, loose, rank)}
        cut = [p for p in loose if _overlaps_any(p, anchored)]
        loose = [p for p in loose if id(p) not in {id(q) for q in cut}]
        for p in cut:
            _attach(p, anchored, loose, rank)
        if not attached and not cut:
            break
        waiting = [p for p in waiting if id(p) not in attached]
    by_file: dict[tuple[str, bool], list[Placed]] = {}
    for p in [*loose, *waiting]:
        by_file.setdefault((p.hit.file_path, p.placement.in_file), []).append(p)
    groups: list[list[Placed]] = list(anchored)
    for (path, in_file), file_hits in by_file.items():
        # Lines a definition shown whole holds: stretches on either side of one do not join across it.
        shown = [(_start(g), _end(g)) for g in anchored if in_file and g[0].hit.file_path == path]
        current: list[Placed] = []
        for p in sorted(file_hits, key=lambda p: (p.start_line, -p.end_line)):
            within = max(_end(current), p.end_line) - _start(current) < MAX_WHOLE if current else False
            across = current and any(a < p.start_line and _end(current) < b for a, b in shown)
            if current and (p.start_line <= _end(current) or (_meets(p, current) and within and not across)):
                current.append(p)
            else:
                if current:
                    groups.append(current)
                current = [p]
        groups.append(current)
    for group in groups:
        group.sort(key=lambda p: rank[id(p)])
    groups.sort(key=lambda g: rank[id(g[0])])
    return groups


def _attach(p: Placed, anchored: list[list[Placed]], loose: list[Placed], rank: dict[int, int]) -> bool:
    """Join ``p`` to the anchored group it meets (see ``merge``); False when it meets none, or is a definition
    that only touches them. Of a hit that meets several, or reaches more than ``ADJOIN`` lines past one, only the
    lines it shares with the best group it overlaps join it; each stretch past them goes to ``loose`` as a place of
    its own."""
    near = [g for g in anchored if p.placement.in_file and g[0].hit.file_path == p.hit.file_path and _meets(p, g)]
    if not near:
        return False
    spans = sorted((_start(g), _end(g)) for g in near)
    overlaps = any(a <= p.end_line and p.start_line <= b for a, b in spans)
    outside = []
    start = p.start_line
    for a, b in spans:
        if start < a:
            outside.append((start, min(a - 1, p.end_line)))
        start = max(start, b + 1)
    if start <= p.end_line:
        outside.append((start, p.end_line))
    if len(near) == 1 and sum(b - a + 1 for a, b in outside) <= ADJOIN and (overlaps or p.whole is None):
        near[0].append(p)
        return True
    if not overlaps:
        return False
    # The lines it shares go to the best group it overlaps (one it only touches has none to take).
    best = min(
        (g for g in near if _start(g) <= p.end_line and p.start_line <= _end(g)),
        key=lambda g: min(rank[id(q)] for q in g),
    )
    best.append(_cut(p, max(p.start_line, _start(best)), min(p.end_line, _end(best)), rank))
    loose.extend(_cut(p, a, b, rank) for a, b in outside)
    return True


def _overlaps_any(p: Placed, anchored: list[list[Placed]]) -> bool:
    """Whether ``p`` shares a line with an anchored group of its file."""
    return p.placement.in_file and any(
        g[0].hit.file_path == p.hit.file_path and _start(g) <= p.end_line and p.start_line <= _end(g) for g in anchored
    )


def _meets(p: Placed, group: Sequence[Placed]) -> bool:
    """Whether ``p`` overlaps or touches the group (a gap of at most one line)."""
    return p.start_line <= _end(group) + 2 and _start(group) <= p.end_line + 2


def _cut(p: Placed, start: int, end: int, rank: dict[int, int]) -> Placed:
    """The lines ``start``..``end`` of ``p``, at its rank."""
    piece = replace(p, placement=replace(p.placement, start_line=start, end_line=end), whole=None)
    rank[id(piece)] = rank[id(p)]
    return piece


def _start(group: Sequence[Placed]) -> int:
    return min(p.start_line for p in group)


def _end(group: Sequence[Placed]) -> int:
    return max(p.end_line for p in group)
