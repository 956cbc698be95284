"""The one formatter: search results and errors -> ``text`` | ``json`` | ``compact``, within a byte budget
(``listings`` renders status and usages with its helpers).

A pure function of what it is given: files are read and code is parsed before (``shaping``). Only this module
knows output field names, rounding, the byte budget and the sentences around results. Over budget (measured in
UTF-8 bytes of the final answer; JSON as OneTool serialises it, compactly), it drops code first (lowest results
first, the top result's last, trimming it before dropping it), then previews, then the lowest results, and says
in a last line what was left out and how to get it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from onetool_code import advice
from onetool_code.answer.shaping import Result
from onetool_code.request import Request

QUERY_ECHO_CHARS = 80
BATCH_QUERY_ECHO_CHARS = 30
DEFINITIONS_SHOWN = 6
DEFINITIONS_LISTED = 1  # ... past the first results, which are places in a list (see ``DETAILED``): the one the query
# is about, when one is (``shaping.describe``), and how many more (2: Django's unseen questions' median answer +34 B)
PREVIEW_LINE_CHARS = 120
# Past the first results an answer is a list of places: a named one is its location and name, an unnamed one (a
# comment, a block) also its best line; the other matching lines are listed for the first ones only. Ten results
# then cost what four did before pages were filled.
DETAILED = 3
# ... and of those, the first two show their whole preview, the third its best line (``Result.lead``): json keeps
# the spec's two lines for the first three. With ``DEFINITIONS_LISTED`` 3 -> 2, the median default answer went from
# 1,438 to 1,362 bytes on the semble split and from 1,453 to 1,397 on Django (bench/README.md, issue 35).
WHOLE_PREVIEWS = 2
INDENT = "  "  # before a result's detail lines


def render_error(message: str, fmt: object) -> str | dict[str, str]:
    if str(fmt).strip().lower() in {"json", "compact"}:
        return {"error": message}
    return f"Error: {shown(message)}"


def shown(text: str) -> str:
    """``text`` for one line of a text answer: a character that is not printable (a line break, a terminal escape
    code, a bidirectional override) is written as its escape (``\\n``, ``\\x1b``, ``\\u202e``), so that a
    repository's file names cannot forge a result line or hide one. Tabs stay."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == "\t" else ch.encode("unicode_escape").decode("ascii") for ch in text)


@dataclass
class _View:
    """What of each result is shown; the budget loop narrows it."""

    results: list[Result]
    content: list[bool]
    preview: list[bool]
    shown: int
    trimmed_top: int | None = None  # lines of the top result's code kept when it alone is too big
    left_out: list[str] = field(default_factory=list)
    notice: str | None = None  # why the answer is not what the mode promised (engine.Ranked.notice)


def render_search(
    results: list[Result], request: Request, next_offset: int | None, notice: str | None = None
) -> str | dict[str, Any]:
    """The answer from shaped results; ``notice`` (``engine.Ranked.notice``) is said first when given."""
    if not results and request.format == "text" and next_offset is None:
        return "\n".join((f"No results found for: {_echo(request)}", *((f"Note: {shown(notice)}",) if notice else ())))
    view = _View(results, [r.content is not None for r in results], [True] * len(results), len(results))
    view.notice = notice
    answer = _render(view, request, next_offset)
    if size(answer) <= request.max_bytes:
        return answer
    return _fit(view, request, next_offset)


def _fit(view: _View, request: Request, next_offset: int | None) -> str | dict[str, Any]:
    def fits() -> bool:
        view.left_out = _left_out(view)
        return size(_render(view, request, next_offset)) <= request.max_bytes

    for i in reversed(range(1, view.shown)):
        if view.content[i]:
            view.content[i] = False
            if fits():
                return _render(view, request, next_offset)
    if view.content[0]:
        code = view.results[0].content or []
        low, high = 0, len(code)
        while low < high:  # the most lines of the top result's code that still fit
            mid = (low + high + 1) // 2
            view.trimmed_top = mid
            if fits():
                low = mid
            else:
                high = mid - 1
        view.trimmed_top = low
        if low == 0:
            view.content[0], view.trimmed_top = False, None
        if fits():
            return _render(view, request, next_offset)
    for i in reversed(range(view.shown)):
        view.preview[i] = False
        if fits():
            return _render(view, request, next_offset)
    while view.shown > 0:
        view.shown -= 1
        if fits():
            break
    return _render(view, request, next_offset)


def _left_out(view: _View) -> list[str]:
    parts = []
    dropped_code = [i + 1 for i in range(view.shown) if view.results[i].content is not None and not view.content[i]]
    if view.trimmed_top is not None:
        parts.append("most of the code of result 1")
    if dropped_code:
        parts.append(f"the code of {_numbers(dropped_code)}")
    no_preview = [i + 1 for i in range(view.shown) if not view.preview[i]]
    if no_preview:
        parts.append(f"the previews of {_numbers(no_preview)}")
    if view.shown < len(view.results):
        parts.append(f"{_numbers(list(range(view.shown + 1, len(view.results) + 1)))}")
    return parts


def _numbers(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"result {numbers[0]}"
    contiguous = numbers == list(range(numbers[0], numbers[-1] + 1))
    return f"results {numbers[0]}-{numbers[-1]}" if contiguous else "results " + ", ".join(map(str, numbers))


def size(answer: str | dict[str, Any]) -> int:
    return len(as_text(answer).encode("utf-8"))


def as_text(answer: str | list[Any] | dict[str, Any]) -> str:
    """An answer as every entry point sends it: text as it is, JSON compactly, as OneTool serialises it and as
    the byte budget counts it."""
    if isinstance(answer, str):
        return answer
    # allow_nan=False: Python would write a bare NaN, which no JSON reader takes; a score is never one (``_score``).
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _echo(request: Request, limit: int = QUERY_ECHO_CHARS) -> str:
    def cut(text: str, n: int) -> str:
        text = " ".join(text.split())
        return text if len(text) <= n else text[: n - 3] + "..."

    if not request.batch:
        return cut(request.queries[0], limit)
    return " | ".join(f"{i}) {cut(q, BATCH_QUERY_ECHO_CHARS)}" for i, q in enumerate(request.queries[:5], start=1)) + (
        f" | ... ({len(request.queries)} queries)" if len(request.queries) > 5 else ""
    )


def _hint(view: _View, request: Request) -> str:
    return (
        f"Left out to stay within {request.max_bytes:,} bytes: {', '.join(view.left_out)}. "
        f"For more: a smaller {advice.parameter('limit')}, {advice.option('content', 'always')} with "
        f"{advice.option('limit', 1)}, {advice.option('expand', 5)}, or {advice.option('max_bytes', request.max_bytes * 2)}."
    )


def _content_of(view: _View, i: int) -> tuple[list[str], bool]:
    """The code lines shown for result ``i`` and whether they stop short of the whole."""
    result = view.results[i]
    lines = result.content or []
    if i == 0 and view.trimmed_top is not None:
        return lines[: view.trimmed_top], True
    return lines, result.content_truncated


def _next_offset(view: _View, request: Request, next_offset: int | None) -> int | None:
    """Where the next page starts: past this page, or at the first hit the byte budget left out, so that a
    client following it never skips a hit (a batch is fused, not paged)."""
    if request.batch or view.shown == len(view.results):
        return next_offset
    return min(r.rank for r in view.results[view.shown :])


def _render(view: _View, request: Request, next_offset: int | None) -> str | dict[str, Any]:
    """One envelope for json and compact (``query``, ``count``, ``results``, then ``next_offset`` and
    ``left_out`` when there are any), so that a client reads every answer, empty or cut, the same way."""
    following = _next_offset(view, request, next_offset)
    if request.format == "text":
        return _text(view, request, following)
    # compact does not echo the query: the caller has it, and compact is for callers that count bytes.
    answer: dict[str, Any] = {"query": _echo(request)} if request.format == "json" else {}
    if view.notice:
        answer["notice"] = view.notice
    below: list[str] = []  # compact's lines after its JSON line: previews and code, as text shows them
    if request.format == "compact":
        # An empty compact answer is its count: ``"results":[]`` made it bigger than text's "No results found".
        answer.update(count=view.shown, **({"results": _compact(view, request, below)} if view.shown else {}))
    else:
        answer.update(count=view.shown, results=[_item(view, i, request) for i in range(view.shown)])
    if following is not None:
        answer["next_offset"] = following
    if view.left_out:
        answer["left_out"] = _hint(view, request)
    return "\n".join((as_text(answer), *below)) if request.format == "compact" else answer


def _item(view: _View, i: int, request: Request) -> dict[str, Any]:
    r = view.results[i]
    out: dict[str, Any] = {"repository": r.repository} if r.repository else {}
    out.update(file_path=r.file_path, start_line=r.start_line, end_line=r.end_line)
    out.update(language=r.language, chunk_type=r.chunk_type, name=r.name, definitions=r.definitions)
    if view.preview[i]:
        out["preview"] = r.preview_text
    if r.match_lines:
        out["match_lines"] = r.match_lines
    out["score"] = _score(r.score, 3)
    if r.file_result_count > 1:
        out["file_result_count"] = r.file_result_count
    if view.content[i]:
        lines, truncated = _content_of(view, i)
        out.update(content="\n".join(lines), content_truncated=truncated, content_lines=r.content_lines)
        if r.content_start != r.start_line or len(r.content or []) != r.end_line - r.start_line + 1:
            out["content_start_line"] = r.content_start
    if r.note:
        out["note"] = r.note
    if request.batch:
        out["queries"] = list(r.queries)
    return out


def _compact(view: _View, request: Request, below: list[str]) -> list[str | list[Any]]:
    """What the text answer says, in fewer bytes: as text does, the file (as text names it: ``repository:path``
    in a workspace) is said once before its results (they are next to each other), here as a string; then a row
    per result (``_compact_row``). Keys repeated on every result, a path repeated for each of a file's results and
    fields text leaves out made compact cost more than text; so did code inside JSON strings, where every line
    break, quote and backslash costs a byte more: previews and code are lines of their own after the JSON
    (``below``), as text shows them, and a row says how many of them are its own."""
    out: list[str | list[Any]] = []
    where = None
    for i in range(view.shown):
        if view.results[i].where != where:
            where = view.results[i].where
            out.append(where)
        out.append(_compact_row(view, i, request, below))
    return out


def _compact_row(view: _View, i: int, request: Request, below: list[str]) -> list[Any]:
    """``[start, end, what, score]`` (``[line, what, score]`` for one line, as text writes ``:45``), then the
    number of preview lines when text shows a preview (its ``N: line`` lines, next in ``below``), then a dict of
    the rest text shows under the result's line, when there is any: ``d`` the definitions inside, ``m`` the other
    matching lines (``3-5,9``), ``c`` the number of code lines shown (next in ``below``; their language is the
    file's), ``cs`` the line the code starts at when that is not the result's first and ``cl`` its length when it
    is not the result's range or not all of it is shown (the rest: lines ``cs + c``..``cs + cl - 1``), ``note``,
    ``q`` the batch's queries it answers."""
    r = view.results[i]
    defined, preview, matches = _under(view, i)
    lines_of = [r.start_line] if r.start_line == r.end_line else [r.start_line, r.end_line]
    row: list[Any] = [*lines_of, _what(r), _score(r.score, 2)]
    if preview:
        row.append(len(preview))
        below.extend(shown(line) for line in preview)
    details: dict[str, Any] = {}
    if defined:
        details["d"] = defined
    if matches:
        details["m"] = ranges(matches)
    if view.content[i]:
        code, truncated = _content_of(view, i)
        details["c"] = len(code)
        below.extend(code)
        if r.content_start != r.start_line:
            details["cs"] = r.content_start
        if truncated or (r.content_start, r.content_last_line) != (r.start_line, r.end_line):
            details["cl"] = r.content_lines
    if r.note:
        details["note"] = r.note
    if request.batch:
        details["q"] = list(r.queries)
    return [*row, details] if details else row


def _what(r: Result) -> str:
    """``chunk_type name``, as a result's line says what it is."""
    return " ".join(part for part in (r.chunk_type, r.name) if part)


def _under(view: _View, i: int) -> tuple[str, list[str], list[int]]:
    """What text and compact show under result ``i``'s line: the definitions inside when they say more than its
    name, the preview (``N: line`` numbered, ``| line`` of indexed code) when its code is not shown and it is one
    of the first results or has no name, and, for the first results, the other matching lines."""
    r = view.results[i]
    # ``method Handler`` says nothing more under ``method HeaderRouter.Handler``, nor ``protocol Request`` under
    # Swift's ``function protocol Request`` (ChunkHound names a Swift protocol, extension or actor so).
    own = {r.name, r.name.rpartition(".")[2], r.name.rpartition(" ")[2]}
    defined = [entry for entry in r.definitions.split(", ") if entry and entry.partition(" ")[2] not in own]
    previewing = view.preview[i] and not view.content[i] and (i < DETAILED or not r.name)
    picked = (r.preview if i < WHOLE_PREVIEWS else r.lead) if previewing else []
    preview = []
    for index in picked:
        text = cut(r.lines[index].strip(), PREVIEW_LINE_CHARS)
        preview.append(f"{r.start_line + index}: {text}" if r.numbered else f"| {text}")
    previewed = {r.start_line + index for index in picked}
    matches = [n for n in r.match_lines if n not in previewed] if i < DETAILED else []
    shown_definitions = DEFINITIONS_SHOWN if i < DETAILED else DEFINITIONS_LISTED
    return _short_definitions(defined, shown_definitions) if defined else "", preview, matches


def _score(score: float, digits: int) -> float | None:
    """The score as answers show it; None (JSON null) for a chunk whose vector in the index has no cosine (zero,
    or NaN), which ChunkHound's order still ranks, first: JSON has no NaN."""
    return round(score, digits) if math.isfinite(score) else None


def _text(view: _View, request: Request, next_offset: int | None) -> str:
    """Header, then the results in order; a file with several results gets its path on a line of its own, its
    results under it (``2. :40-52 ...``), so no path is printed twice."""
    total = len(view.results)
    noun = "result" if total == 1 else "results"
    if request.batch:
        out = [f"Found {total} {noun} for {len(request.queries)} queries: {_echo(request)}"]
    else:
        out = [f"Found {total} {noun} for: {_echo(request)}"]
    if view.notice:
        out.append(f"Note: {shown(view.notice)}")
    path = None
    for i in range(view.shown):
        result = view.results[i]
        grouped = result.file_result_count > 1
        if grouped and result.where != path:
            out.append(shown(result.where))
        path = result.where
        out.extend(_text_result(view, i, request, grouped))
    if next_offset is not None:
        out.append(f"More results: offset={next_offset}{_merged(view, request, next_offset)}")
    if view.left_out:
        out.append(_hint(view, request))
    return "\n".join(out)


def _merged(view: _View, request: Request, next_offset: int) -> str:
    """Why a page of 10 hits shows 8 results (hits of one file that overlap are one result), so that the count
    and the next offset do not read as a contradiction."""
    if view.left_out or request.batch or next_offset - request.offset <= len(view.results):
        return ""
    return " (overlapping hits merged)"


def _text_result(view: _View, i: int, request: Request, grouped: bool) -> list[str]:
    """``N. path:start-end type name (score)``, then what is inside (``_under``): definitions, the preview, the
    other matching lines; then the code."""
    r = view.results[i]
    score = _score(r.score, 2)
    extras = ("no score" if score is None else f"{score:.2f}") + (
        f", q{','.join(map(str, r.queries))}" if request.batch else ""
    )
    lines_of = f"{r.start_line}" if r.start_line == r.end_line else f"{r.start_line}-{r.end_line}"
    place = f":{lines_of}" if grouped else f"{r.where}:{lines_of}"
    lines = [shown(f"{i + 1}. {place} {_what(r)} ({extras})")]
    defined, preview, matches = _under(view, i)
    if defined:
        lines.append(shown(f"{INDENT}defines: {defined}"))
    lines.extend(f"{INDENT}{shown(line)}" for line in preview)
    if matches:
        lines.append(f"{INDENT}matches: {ranges(matches)}")
    if view.content[i]:
        lines.extend(_text_code(view, i))
    if r.note:
        lines.append(shown(f"{INDENT}note: {r.note}"))
    return lines


def _fence(code: Sequence[str]) -> str:
    """A fence longer than any run of backticks in the code (CommonMark's rule): Markdown's own ```json block
    inside a chunk then stays inside ours instead of closing it."""
    longest = max((len(run) for line in code for run in re.findall(r"`{3,}", line)), default=0)
    return "`" * max(3, longest + 1)


def _text_code(view: _View, i: int) -> list[str]:
    """The fenced code, with where it starts when that is not the result's range, and what was cut."""
    r = view.results[i]
    code, truncated = _content_of(view, i)
    lines = []
    if r.numbered and (r.content_start, r.content_last_line) != (r.start_line, r.end_line):
        lines.append(f"{INDENT}code of lines {r.content_start}-{r.content_last_line}:")
    fence = _fence(code)
    lines.extend([f"{fence}{r.language}", *code, fence])
    if truncated:
        more = r.content_lines - len(code)
        if r.numbered:
            shown_end = r.content_start + len(code) - 1
            lines.append(shown(f"{INDENT}... {more} more lines: read {r.where}:{shown_end + 1}-{r.content_last_line}"))
        else:
            lines.append(f"{INDENT}... {more} more lines of the indexed code")
    return lines


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def ranges(numbers: list[int]) -> str:
    """``3, 4, 5, 9`` as ``3-5,9``: runs of consecutive line numbers are common and cost bytes."""
    parts: list[str] = []
    start = previous = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if n is not None:
            start = previous = n
    return ",".join(parts)


def _short_definitions(entries: list[str], most: int) -> str:
    """At most ``most`` entries (a test file can define dozens), a label said once for a run of
    entries that share it: ``class Store, method get, put``."""
    parts, previous = [], ""
    for entry in entries[:most]:
        label, _, name = entry.partition(" ")
        parts.append(name if label == previous else entry)
        previous = label
    more = f" (+{len(entries) - most} more)" if len(entries) > most else ""
    return ", ".join(parts) + more
