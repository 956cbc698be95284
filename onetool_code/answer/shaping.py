"""From ranked hits to the results an agent reads: place, merge, trim, name, match, and decide on content.

Everything that reads files or parses code happens here, so that the formatter is a pure function of the
results. Order (PRODUCT.md §2): ranked and de-duplicated hits arrive; each is placed in its file as it is now
(``placement``); hits of one file whose line ranges overlap, nest or touch (a gap of at most one line) merge,
because ChunkHound stores a class and the methods inside it as separate chunks, save that a definition shown
whole keeps its own lines (``merging``); blank edge lines are trimmed; results of one file are put together (files
in the order of their best result) so that the answer names each path once; then content is included by the
number of results left.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from onetool_code.answer import matching
from onetool_code.answer.merging import Placed, merge, whole_definition
from onetool_code.hits import Hit
from onetool_code.names import (
    COMMENT_STARTS,
    STOPWORDS,
    defining_line,
    display_name,
    identifier_parts,
    match_tokens,
    query_tokens,
    stem,
    stems_in,
)
from onetool_code.project.definitions import Definition, definitions, outline
from onetool_code.project.source import SourceFiles, Unread
from onetool_code.request import Request

# A hybrid page's candidates, in hits per result asked for: ChunkHound cuts a long definition into pieces and
# stores a class apart from its methods, so ten hits may merge into four results.
FILL = 3


def asked(request: Request) -> Request:
    """What a search asks the engine for: a hybrid page is filled from further down its ranking when merging folds
    hits into one result. The other modes keep their page of ``limit`` hits: the order they promise (ChunkHound's)
    is of hits, and a batch is fused, not paged."""
    return replace(request, limit=FILL * request.limit) if request.mode == "hybrid" and not request.batch else request


CONTENT_LINE_CAP = 150
# The first results shown get a 2-line preview, the others their best line: the detail goes where the agent
# looks first (as code does, by the number of results), and the rest stay one line of code each.
FULL_PREVIEWS = 3
# Which definition inside a long result the query is about (``_matched_best``): a word such as "the" or "for"
# counts this much of a word that says what is asked about, and a name spelled out by the query counts this many
# words (a query's "fine for an overdue loan" meets ``fineFor``, whose body shares as many words with it as
# ``markOverdueLoans``'s does).
STOPWORD_WEIGHT = 0.25
NAME_WEIGHT = 2.0


@dataclass(frozen=True)
class Inner:
    """A definition inside a result (not the one that names it), by indexes into ``Result.lines``: ``head`` the
    line that names it, ``first`` the first of the comment, docstring or decorator lines above it (``head`` when
    none), ``last`` its last line."""

    label: str
    name: str
    first: int
    head: int
    last: int

    @property
    def entry(self) -> str:
        """As ``Result.definitions`` lists it: ``method fineFor``."""
        return f"{self.label} {self.name}"


@dataclass
class Result:
    """One entry of the answer.

    ``lines`` are the file's lines ``start_line``..``end_line`` when ``numbered``; otherwise the file could not
    serve them (gone, or no longer holding the chunk: ``note`` says which), ``start_line``..``end_line`` is
    ChunkHound's range and ``lines`` the indexed code, whose lines have no known file line numbers.
    """

    file_path: str
    language: str
    chunk_type: str
    name: str
    start_line: int
    end_line: int
    score: float
    lines: list[str]
    numbered: bool = True
    definitions: str = ""
    preview: list[int] = field(default_factory=list)
    lead: list[int] = field(default_factory=list)  # the preview's best line alone (``describe``)
    match_lines: list[int] = field(default_factory=list)
    file_result_count: int = 1
    queries: tuple[int, ...] = ()
    content: list[str] | None = None
    content_start: int = 0
    content_truncated: bool = False
    content_lines: int = 0
    note: str | None = None
    rank: int = 0  # the best place among its hits in the whole ranked list (see ``engine.Ranked``)
    inner: tuple[Inner, ...] = ()  # the definitions inside it, for naming the one a query is about (``describe``)
    repository: str = ""  # the label of its repository in a workspace search (``workspace``); "" for one project

    @property
    def where(self) -> str:
        """The file as the answer names it: ``repository:path`` in a workspace, the path alone otherwise."""
        return f"{self.repository}:{self.file_path}" if self.repository else self.file_path

    @property
    def preview_text(self) -> str:
        return matching.preview_text(self.lines, self.preview)

    @property
    def content_last_line(self) -> int:
        """The last line of the whole content (before any cut): past ``end_line`` when expanded."""
        return self.content_start + self.content_lines - 1


def shape(hits: Sequence[Hit], request: Request, project_root: Path) -> list[Result]:
    """The results for ``hits`` (best first), each file read once from ``project_root``."""
    sources = SourceFiles(project_root)
    return _results([whole_definition(h, sources) for h in hits], request, sources)


def fill(
    candidates: Sequence[Hit],
    request: Request,
    project_root: Path,
    next_offset: int | None,
    above: Sequence[Hit] = (),
) -> tuple[list[Result], int | None]:
    """A full page: the results of as many of ``candidates`` (best first, each with its ``rank`` in the whole
    list) as make ``request.limit`` results once merged, and the offset of the first one left for the next page
    (``next_offset``, the candidates' end, when all were used). Merging folds the pieces of one definition, a
    class and its methods, into one result; the page then fills from further down rather than coming back short.
    A candidate whose lines a hit of an earlier page (``above``) showed, placed as it was then, is passed over:
    the pieces of a class shown whole on page 1 are not that class again on page 2.
    """
    sources = SourceFiles(project_root)
    files = {hit.file_path for hit in candidates}
    shown = [whole_definition(hit, sources) for hit in above if hit.file_path in files]
    used: list[Placed] = []
    for hit in candidates:
        placed = whole_definition(hit, sources)
        if any(_covers(earlier, placed) for earlier in shown):
            continue
        if len(merge([*used, placed])) > request.limit:
            return _results(used, request, sources), hit.rank
        used.append(placed)
    return _results(used, request, sources), next_offset


def _covers(earlier: Placed, placed: Placed) -> bool:
    """Whether every line of ``placed`` is in ``earlier``'s (ranges of the file's lines, or ChunkHound's ranges
    when neither is in the file)."""
    same = (earlier.hit.file_path, earlier.placement.in_file) == (placed.hit.file_path, placed.placement.in_file)
    return same and earlier.start_line <= placed.start_line and placed.end_line <= earlier.end_line


def _results(placed: Sequence[Placed], request: Request, sources: SourceFiles) -> list[Result]:
    results = by_file([_build(group, sources) for group in merge(placed)])
    describe(results, request)
    _include_content(results, request, lambda _: sources)
    return results


def describe(results: list[Result], request: Request) -> None:
    """What depends on a result's place in the answer and on the query: how many results its file has, its
    matching lines, its preview (two lines for the first ``FULL_PREVIEWS``, one after; ``lead``: its best line
    alone) and, in a long result, which definition inside it the query is about (``_matched_best``): named first
    among its definitions, its lines the preview (the line that names it, then its best matching line) and the
    matching lines, so that an agent handed a whole class reads the method asked about, not the class's first
    lines."""
    tokens_of = [match_tokens(q) for q in request.queries]
    stems_of = [query_tokens(q) for q in request.queries]
    counts = Counter(r.where for r in results)
    for position, result in enumerate(results):
        result.file_result_count = counts[result.where]
        wanted = result.queries or tuple(range(1, len(request.queries) + 1))
        words = list(dict.fromkeys(t for q in wanted for t in tokens_of[q - 1]))
        count = 2 if position < FULL_PREVIEWS else 1
        best = _matched_best(result, list(dict.fromkeys(t for q in wanted for t in stems_of[q - 1])))
        if best is None:
            if result.numbered:
                result.match_lines = matching.match_lines(result.lines, words, result.start_line)
            said = _naming_lines(result)
            result.preview = matching.preview(result.lines, words, count, said)
            result.lead = result.preview if count == 1 else matching.preview(result.lines, words, 1, said)
            continue
        entries = [e for e in result.definitions.split(", ") if e and e != best.entry]
        result.definitions = ", ".join([best.entry, *entries])
        span = result.lines[best.first : best.last + 1]
        if result.numbered:
            result.match_lines = matching.match_lines(span, words, result.start_line + best.first)
        result.preview = result.lead = [best.head]
        if count == 2:
            other = matching.preview(span, words, 1, {best.head - best.first})
            result.preview = sorted({best.head, *(best.first + i for i in other)})


def _matched_best(result: Result, stems: Sequence[str]) -> Inner | None:
    """The definition inside ``result`` that the query's words (``stems``: ``names.query_tokens``, the lexical
    index's) meet best, or None: when it holds none, when the query only names the result itself ("LoanService"),
    or when no definition meets one of the query's words other than ``STOPWORDS``.

    A definition scores each query word its lines (with the comment above it) hold, a stop word
    ``STOPWORD_WEIGHT``, plus ``NAME_WEIGHT`` times the share of its name's parts the query holds; the
    shorter wins a tie. Words only, since a result's lines are all there is to go by here: no vectors."""
    stop = {stem(w) for w in STOPWORDS}
    said = [t for t in stems if t not in stop]
    if not result.inner or not said or set(said) <= {stem(p) for p in identifier_parts(result.name)}:
        return None
    wanted = set(stems)

    def score(inner: Inner) -> tuple[bool, float, int]:
        held = stems_in("\n".join(result.lines[inner.first : inner.last + 1]))
        parts = _name_stems(inner.name)
        words = sum(STOPWORD_WEIGHT if t in stop else 1.0 for t in wanted & held)
        named = sum(1 for p in parts if p in wanted) / len(parts)
        return bool((wanted - stop) & (held | set(parts))), words + NAME_WEIGHT * named, inner.first - inner.last

    best = max(result.inner, key=lambda inner: score(inner)[1:])
    return best if score(best)[0] else None


def _name_stems(name: str) -> list[str]:
    """The parts of a name by their stems (``fineFor``: ``fine``, ``for``), or the whole name for one of one part."""
    whole, *parts = identifier_parts(name)
    return [stem(p) for p in parts if len(p) > 1] or [stem(whole)]


def _naming_lines(result: Result) -> set[int]:
    """Indexes of the result's lines that only say what its first line says: the line that defines its name
    (``def load_config(path):`` under ``function load_config``)."""
    if not result.name or not re.fullmatch(r"[\w$]+", result.name):
        return set()
    name = result.name.lower()
    heads = [(i, line) for i, line in enumerate(result.lines[:3]) if name in line.lower()]
    if not heads:
        return set()
    pattern, signature = _naming_patterns(result.name)
    return {i for i, line in heads if pattern.search(line) or signature.search(line)}


@functools.lru_cache(maxsize=1024)
def _naming_patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The patterns of a line defining ``name``: compiled once per name (about a millisecond each, ten names an
    answer), since Python's own cache of 512 patterns turns over within a few searches."""
    # A method with its return type before its name (``public String toString() {``) is one too.
    signature = re.compile(rf"(?<![\w$]){re.escape(name)}\s*(?:<[^>]*>)?\(.*[{{:]\s*$")
    return defining_line(name.lower()), signature


def _build(group: list[Placed], sources: SourceFiles) -> Result:
    best = group[0].hit
    # The widest hit names a merged range: "class Store" describes lines 1-80 better than "method put", unless
    # the range is a definition shown whole, which names it.
    widest = next((p for p in group if p.whole), None) or max(
        group, key=lambda p: (p.end_line - p.start_line, -group.index(p))
    )
    start = min(p.start_line for p in group)
    end = max(p.end_line for p in group)
    numbered = group[0].placement.in_file
    note = max(group, key=lambda p: p.placement.change).placement.note
    if numbered:
        lines = sources.window(best.file_path, start, end)
        while len(lines) > 1 and not lines[0].strip():
            lines.pop(0)
            start += 1
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
            end -= 1
        text = sources.read(best.file_path)
        context, first = (() if isinstance(text, Unread) else text.lines), start
    else:
        lines = _indexed_code(group)
        context, first = lines, 1
    defined = definitions("\n".join(lines), best.language)
    kind = widest.whole.label if widest.whole else widest.hit.chunk_type
    name = widest.whole.name if widest.whole else display_name(widest.hit.symbol, kind, best.language, context, first)
    if not name and defined:
        # ChunkHound names many definitions after their line (``definition_line_95``): the first one the code
        # holds names the result instead (the rest stay ``definitions``).
        kind, _, name = defined.split(", ")[0].partition(" ")
    return Result(
        file_path=best.file_path,
        language=best.language,
        chunk_type=kind,
        name=name,
        start_line=start,
        end_line=end,
        score=max(p.hit.score for p in group),
        lines=lines,
        numbered=numbered,
        definitions=defined,
        queries=tuple(sorted({q for p in group for q in p.hit.queries})),
        note=note,
        rank=min(p.hit.rank for p in group),
        inner=_inner(
            sources.outline(best.file_path, best.language) if numbered else outline("\n".join(lines), best.language),
            lines,
            start if numbered else 1,
            (kind, name),
        )
        # Parsed only for a result that holds a definition besides the one it is (a class with its methods).
        if any(entry != f"{kind} {name}" for entry in defined.split(", ") if entry)
        else (),
    )


def _inner(
    found: Sequence[Definition], lines: Sequence[str], first_line: int, own: tuple[str, str]
) -> tuple[Inner, ...]:
    """The definitions of ``found`` (an outline whose line ``first_line`` is ``lines[0]``) that lie within
    ``lines``, but the one named ``own`` (label, name) that the result is, each with the comment, docstring or
    decorator lines right above it."""
    inside = []
    for d in found:
        first, last = d.start_line - first_line, d.end_line - first_line
        if first < 0 or last >= len(lines) or (d.label, d.name) == own:
            continue
        head = next((i for i in range(first, last + 1) if d.name in lines[i]), first)
        while first > 0 and lines[first - 1].lstrip().startswith(COMMENT_STARTS):
            first -= 1
        inside.append(Inner(d.label, d.name, first, head, last))
    return tuple(inside)


def _indexed_code(group: list[Placed]) -> list[str]:
    """The group's chunk texts in line order, a chunk left out when an earlier one already holds its text,
    blank edge lines dropped (the range stays ChunkHound's)."""
    text = ""
    for p in sorted(group, key=lambda p: (p.start_line, -p.end_line)):
        code = p.hit.code.strip("\n")
        if code.strip() not in text:
            text = f"{text}\n{code}" if text else code
    lines = text.split("\n")
    while len(lines) > 1 and not lines[0].strip():
        lines.pop(0)
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return lines


def by_file(results: list[Result]) -> list[Result]:
    """Results of one file (of one repository) together, files in the order of their best result, each file's
    in rank order."""
    order: dict[str, int] = {}
    for result in results:
        order.setdefault(result.where, len(order))
    return sorted(results, key=lambda r: order[r.where])


def include_content(results: list[Result], request: Request, roots: Mapping[str, Path]) -> None:
    """Content for the results of several repositories (``Result.repository`` keys ``roots``), decided by how
    many results the whole answer has, each read from its own repository's root."""
    sources = {label: SourceFiles(root) for label, root in roots.items()}
    _include_content(results, request, lambda result: sources[result.repository])


def _include_content(results: list[Result], request: Request, sources_of: Callable[[Result], SourceFiles]) -> None:
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
        if request.expand and result.numbered:
            start = max(1, result.start_line - request.expand)
            lines = sources_of(result).window(result.file_path, start, result.end_line + request.expand)
        result.content_lines = len(lines)
        result.content_start = start
        if cap is not None and len(lines) > cap:
            result.content = lines[:cap]
            result.content_truncated = True
        else:
            result.content = lines
