"""From ranked hits to the results an agent reads: merge, trim, name, match, and decide on content.

Order (PRODUCT.md §2): ranked and de-duplicated hits arrive; hits of one file whose line ranges overlap, nest
or touch (a gap of at most one line) merge, because ChunkHound stores a class and the methods inside it as
separate chunks; blank edge lines are trimmed; then content is included by the number of results left.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from onetool_code import matching
from onetool_code.definitions import definitions
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.source import SourceFiles

CONTENT_LINE_CAP = 150
_PART_SUFFIX = re.compile(r"(?:_part\d+)+$")
# ChunkHound's labels for chunks with no real name (measured on 6.1.0): comment_line_12, javadoc_line_9,
# heading_3, paragraph_Query_..., code_block_sh, unordered_list_item_..., import_csv_import_json_...
_SYNTHETIC = re.compile(
    r"^(?:file_structure|\w*_line_\d+|heading_\d+|paragraph(?:_.*)?|code_block(?:_.*)?|unordered_list_item.*|"
    r"ordered_list_item.*|(?:import|package)_.*|mod_\w+_unnamed_import)$"
)
_UNNAMED_TYPES = frozenset({"import", "comment", "docstring", "paragraph", "code_block"})


@dataclass
class Result:
    """One entry of the answer. ``lines`` are the code lines of ``start_line``..``end_line``."""

    file_path: str
    language: str
    chunk_type: str
    name: str
    start_line: int
    end_line: int
    score: float
    lines: list[str]
    definitions: str = ""
    preview: list[int] = field(default_factory=list)
    match_lines: list[int] = field(default_factory=list)
    file_result_count: int = 1
    queries: tuple[int, ...] = ()
    content: list[str] | None = None
    content_start: int = 0
    content_truncated: bool = False
    content_lines: int = 0
    note: str | None = None
    rank: int = 0  # the best place among its hits in the whole ranked list (see ``engine.Ranked``)

    @property
    def preview_text(self) -> str:
        return matching.preview_text(self.lines, self.preview)

    @property
    def content_last_line(self) -> int:
        """The last line of the whole content (before any cut): past ``end_line`` when expanded."""
        return self.content_start + self.content_lines - 1


def display_name(symbol: str, chunk_type: str = "") -> str:
    """ChunkHound's symbol without ``_partN`` suffixes; synthetic labels (``comment_line_12``) and the
    made-up names of imports and comments become ""."""
    name = _PART_SUFFIX.sub("", symbol or "")
    return "" if chunk_type in _UNNAMED_TYPES or _SYNTHETIC.match(name) else name


def shape(hits: Sequence[Hit], request: Request, sources: SourceFiles) -> list[Result]:
    tokens_of = [matching.tokenize(q) for q in request.queries]
    located, notes = _locate(hits, sources)
    results = [_build(group, sources, notes) for group in merge(located)]
    counts = Counter(r.file_path for r in results)
    for result in results:
        result.file_result_count = counts[result.file_path]
        wanted = result.queries or tuple(range(1, len(request.queries) + 1))
        tokens = list(dict.fromkeys(t for q in wanted for t in tokens_of[q - 1]))
        result.match_lines = matching.match_lines(result.lines, tokens, result.start_line)
        result.preview = matching.preview(result.lines, tokens)
    _include_content(results, request, sources)
    return results


def merge(hits: Sequence[Hit]) -> list[list[Hit]]:
    """Groups of hits to show as one, in the rank order of each group's best hit.

    Within a file, hits sorted by start line merge while the next starts at most two lines after the
    current group ends (overlapping, nested, adjacent, or one line apart).
    """
    rank = {id(hit): i for i, hit in enumerate(hits)}
    by_file: dict[str, list[Hit]] = {}
    for hit in hits:
        by_file.setdefault(hit.file_path, []).append(hit)
    groups: list[list[Hit]] = []
    for file_hits in by_file.values():
        current: list[Hit] = []
        end = 0
        for hit in sorted(file_hits, key=lambda h: (h.start_line, -h.end_line)):
            if current and hit.start_line <= end + 2:
                current.append(hit)
                end = max(end, hit.end_line)
            else:
                if current:
                    groups.append(current)
                current, end = [hit], hit.end_line
        groups.append(current)
    for group in groups:
        group.sort(key=lambda h: rank[id(h)])
    groups.sort(key=lambda g: rank[id(g[0])])
    return groups


def _locate(hits: Sequence[Hit], sources: SourceFiles) -> tuple[list[Hit], dict[int, str]]:
    """Each hit at its real place in the file (``SourceFiles.locate``), and, by ``id``, why a hit could not
    be found there (the file is gone or changed since indexing)."""
    located: list[Hit] = []
    notes: dict[int, str] = {}
    for hit in hits:
        place = sources.locate(hit.file_path, hit.start_line, hit.end_line, hit.code)
        if isinstance(place, str):
            located.append(hit)
            notes[id(hit)] = place
        else:
            located.append(replace(hit, start_line=place[0], end_line=place[1]))
    return located, notes


def _build(group: list[Hit], sources: SourceFiles, notes: dict[int, str]) -> Result:
    best = group[0]
    # The widest hit names a merged range: "class Store" describes lines 1-80 better than "method put".
    widest = max(group, key=lambda h: (h.end_line - h.start_line, -group.index(h)))
    start = min(h.start_line for h in group)
    end = max(h.end_line for h in group)
    note = next((notes[id(h)] for h in group if id(h) in notes), None)
    lines = _from_chunks(group, start, end) if note else sources.window(best.file_path, start, end)
    while len(lines) > 1 and not lines[0].strip():
        lines.pop(0)
        start += 1
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
        end -= 1
    queries = tuple(sorted({q for h in group for q in h.queries}))
    return Result(
        file_path=best.file_path,
        language=best.language,
        chunk_type=widest.chunk_type,
        name=display_name(widest.symbol, widest.chunk_type),
        start_line=start,
        end_line=end,
        score=max(h.score for h in group),
        lines=lines,
        definitions=definitions("\n".join(lines), best.language),
        queries=queries,
        note=note,
        rank=min(h.rank for h in group),
    )


def _from_chunks(group: list[Hit], start: int, end: int) -> list[str]:
    """The range rebuilt from the indexed chunk texts, best hit first, when the file cannot serve it."""
    rebuilt: dict[int, str] = {}
    for hit in group:
        for offset, text in enumerate(hit.code.split("\n")):
            if start <= hit.start_line + offset <= end:
                rebuilt.setdefault(hit.start_line + offset, text)
    return [rebuilt.get(n, "") for n in range(start, end + 1)]


def _include_content(results: list[Result], request: Request, sources: SourceFiles) -> None:
    """Progressive inclusion counted after merging: 1 result -> all of it; 2-3 -> up to 150 lines each;
    4+ -> none. ``content="always"`` gives every result the 2-3 treatment, ``"never"`` none; ``expand``
    implies content, with that many lines of context on each side read from the file on disk."""
    count = len(results)
    if request.content == "never" and request.expand is None:
        return
    if request.content == "auto" and request.expand is None and count >= 4:
        return
    cap = None if count == 1 else CONTENT_LINE_CAP + 2 * (request.expand or 0)
    for result in results:
        lines, start = result.lines, result.start_line
        if request.expand and result.note is None:
            start = max(1, result.start_line - request.expand)
            lines = sources.window(result.file_path, start, result.end_line + request.expand)
        result.content_lines = len(lines)
        result.content_start = start
        if cap is not None and len(lines) > cap:
            result.content = lines[:cap]
            result.content_truncated = True
        else:
            result.content = lines
