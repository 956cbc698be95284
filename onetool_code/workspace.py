"""Several repositories in one search: each resolved, searched and shaped against its own root, their answers
fused into one ranked page; a repository that fails costs a note, not the answer.

Each repository keeps what one project has: its index location, its embedding provider and model, its key zone
and its ``.chunkhound.json`` (``settings.resolve`` per root); the filters apply to all. Repositories whose
indexes share a model share one embeddings request (``query_vectors.Shared``). Every result names its
repository by a label: its folder name, made unique when two are equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from onetool_code import advice, engine, query_vectors, report, settings, shaping
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.names import match_tokens
from onetool_code.request import Request

MAX_REPOSITORIES = 20


@dataclass(frozen=True)
class Member:
    """One repository of a workspace: its label and settings, or why it could not be resolved."""

    label: str
    settings: settings.Settings | None
    problem: OneToolCodeError | None = None


@dataclass(frozen=True)
class Found:
    """A workspace's page: results best first, each labelled; ``notice`` names the repositories that failed."""

    results: list[shaping.Result]
    next_offset: int | None
    notice: str | None


def place(path: object, named: Mapping[str, list[str]]) -> str | list[str] | None:
    """What a call's ``path`` names: one project root (None: the default one), or the roots of a workspace.

    Each ``@name`` is that workspace's roots here, at the entry, whatever their number: a one-root workspace is
    its root, never a folder called ``@name`` in the current directory. Roots that are the same folder
    (``api``, ``api/``, a symlink to it) are searched once, under the first one's name; a list left with one
    root is answered exactly as that root alone."""
    path = settings.named_paths(path, named)
    if path is None or isinstance(path, str):
        return path
    if not isinstance(path, (list, tuple)) or not all(isinstance(p, str) and p.strip() for p in path):
        raise BadInputError("path must be a project root, or a list of project roots (non-empty texts)")
    if not 1 <= len(path) <= MAX_REPOSITORIES:
        raise BadInputError(f"path names {len(path)} projects; give 1 to {MAX_REPOSITORIES}")
    distinct: dict[str, str] = {}
    for root in path:
        distinct.setdefault(_folder(root), root)
    roots = list(distinct.values())
    return roots[0] if len(roots) == 1 else roots


def one(path: object, named: Mapping[str, list[str]], tool: str) -> str | None:
    """The one project root of a tool that works on one project (``related``, ``usages``, the indexer); a
    workspace of several is bad input naming its roots."""
    where = place(path, named)
    if isinstance(where, list):
        raise BadInputError(
            f"{tool} works on one project, and {advice.parameter('path')} names {len(where)}: give one of "
            f"{', '.join(where)}"
        )
    return where


def _folder(root: str) -> str:
    """The folder a root names, to tell two spellings of one apart; a root that names none keeps its text (its
    problem is reported when it is resolved)."""
    try:
        return str(settings.project_root(root))
    except OneToolCodeError:
        return root


def members(paths: Sequence[str], resolve: Callable[[str], settings.Settings]) -> list[Member]:
    """Each root resolved on its own by ``resolve``; a root that cannot be (gone, a broken ``.chunkhound.json``)
    is kept with its problem, to be named in a note."""
    found: list[tuple[str, settings.Settings | None, OneToolCodeError | None]] = []
    for path in paths:
        try:
            resolved = resolve(path)
        except OneToolCodeError as exc:
            found.append((Path(path.strip()).expanduser().name or path, None, exc))
            continue
        found.append((resolved.project_root.name, resolved, None))
    names = labels([name for name, _, _ in found])
    return [Member(name, resolved, problem) for name, (_, resolved, problem) in zip(names, found, strict=True)]


def labels(names: Sequence[str]) -> list[str]:
    """The folder names, made unique in order: a second ``api`` is ``api-2``."""
    taken: set[str] = set()
    unique = []
    for name in names:
        label, n = name or "project", 1
        while label in taken:
            n += 1
            label = f"{name}-{n}"
        taken.add(label)
        unique.append(label)
    return unique


def search(found: Sequence[Member], request: Request) -> Found:
    """One page over every repository: each searched for the first ``offset + limit`` results (its page filled
    as a single search fills it), shaped against its own root with no code yet, the lists fused (``fuse``),
    the page cut, and code included by the number of results of the whole answer."""
    shared = query_vectors.Shared()
    end = request.offset + request.limit
    each = replace(request, offset=0, limit=end, content="never", expand=None)
    filled = request.mode == "hybrid" and not request.batch
    asked = replace(each, limit=shaping.FILL * end) if filled else each
    lists: list[list[shaping.Result]] = []
    notes: dict[str, list[str]] = {}  # a notice -> the repositories it is about
    failed: list[tuple[str, OneToolCodeError]] = []
    more = False
    for member in found:
        if member.settings is None:
            assert member.problem is not None
            failed.append((member.label, member.problem))
            continue
        try:
            ranked = engine.run(member.settings, asked, shared)
        except OneToolCodeError as exc:
            failed.append((member.label, exc))
            continue
        results, following = shaping.fill(ranked.hits, each, member.settings.project_root, ranked.next_offset)
        for result in results:
            result.repository = member.label
        lists.append(results)
        more = more or following is not None
        if ranked.notice:
            notes.setdefault(ranked.notice, []).append(member.label)
    if not lists:
        raise all_failed(failed)
    tokens = list(dict.fromkeys(t for query in request.queries for t in match_tokens(query)))
    fused = fuse(lists, by_score=request.mode == "hybrid", tokens=tokens)
    # Each result's rank is its place in the fused list, before the results of a file are put together: a page
    # cut short by the budget then names an offset that skips nothing (``engine.Ranked``).
    for position, result in enumerate(fused):
        result.rank = position
    page = shaping.by_file(fused[request.offset : end])
    shaping.describe(page, request)
    roots = {m.label: m.settings.project_root for m in found if m.settings is not None}
    shaping.include_content(page, request, roots)
    next_offset = end if not request.batch and (more or len(fused) > end) else None
    for label, exc in failed:
        notes.setdefault(f"not searched: {_first_sentence(exc)}", []).append(label)
    # Said once for the repositories it is about: seven indexes without vectors are one line, not seven.
    said = "; ".join(f"{', '.join(named)}: {notice}" for notice, named in notes.items())
    return Found(page, next_offset, said or None)


def fuse(
    lists: Sequence[Sequence[shaping.Result]], *, by_score: bool, tokens: Sequence[str] = ()
) -> list[shaping.Result]:
    """One ranking from each repository's own, best first.

    Hybrid (``by_score``): by each result's fused score times what the query's words say of its repository
    (``_about``). The fused score is rank-based (reciprocal ranks of the definitions named, the words and the
    meaning, plus structural priors), scaled so that a hit first in every list scores about 1 in any corpus:
    unlike BM25 or cosine, it says how sure its own repository is, so a repository whose definition the query
    names outranks the others' best guesses. But every repository's best guess for a query in words scores
    about 1; what tells them apart is which of them hold the query's words that the others lack ("ZodError",
    "dependency injection"). Measured on the semble dev split's 7 repositories as one workspace
    (``bench/workspace.py``, 129 queries, a query's own repository scored): NDCG@10 0.67 with the words, 0.64
    by the score alone, 0.37 interleaving the lists by rank (reciprocal-rank fusion of lists that share no
    hit), against 0.84 for each repository searched alone.

    The other modes' scores are raw (BM25, cosine of models that may differ, a regex's count) and not
    comparable across corpora: their lists are interleaved by rank, ties broken by the score as a share of its
    repository's best.
    """
    about = _about(lists, tokens)
    keyed: list[tuple[tuple[float, float], int, int]] = []
    for n, results in enumerate(lists):
        best = (results[0].score if results else 0.0) or 1.0
        for position, r in enumerate(results):
            key = (-r.score * (ABOUT_FLOOR + about[n]), position) if by_score else (position, -r.score / best)
            keyed.append((key, n, position))
    keyed.sort()
    return [lists[n][position] for _, n, position in keyed]


# A repository none of whose results hold a word of the query keeps this share of its scores: its definitions
# named by the query still count.
ABOUT_FLOOR = 0.5
ABOUT_DEPTH = 10  # the results of each repository whose words count


def _about(lists: Sequence[Sequence[shaping.Result]], tokens: Sequence[str]) -> list[float]:
    """How much each repository's first results hold of the query's words, 0..1, each word weighted by how few
    repositories hold it (log((R + 1) / (holding + 0.5))): a word every repository holds ("how", "request")
    tells little, one only a repository holds tells which one the query is about."""
    held = [
        {t for t in tokens if any(t in line.lower() for r in results[:ABOUT_DEPTH] for line in r.lines)}
        for results in lists
    ]
    weights = {t: math.log((len(lists) + 1) / (n + 0.5)) for t in tokens if (n := sum(t in h for h in held))}
    total = sum(weights.values())
    return [sum(weights[t] for t in h) / total if total else 0.0 for h in held]


def status(found: Sequence[Member]) -> list[tuple[str, report.StatusReport | str]]:
    """Each repository's status, or why it has none."""
    reports: list[tuple[str, report.StatusReport | str]] = []
    for member in found:
        if member.settings is None:
            assert member.problem is not None
            reports.append((member.label, str(member.problem)))
            continue
        try:
            reports.append((member.label, report.gather(member.settings)))
        except OneToolCodeError as exc:
            reports.append((member.label, str(exc)))
    return reports


def all_failed(failed: Sequence[tuple[str, OneToolCodeError]]) -> OneToolCodeError:
    """Every repository failed: that is the answer, each named with its whole message."""
    kinds = {type(exc) for _, exc in failed}
    kind = kinds.pop() if len(kinds) == 1 else OneToolCodeError
    said = " | ".join(f"{label}: {exc}" for label, exc in failed)
    return kind(f"no repository of the workspace could answer ({len(failed)}): {said}")


def _first_sentence(exc: Exception) -> str:
    """The gist of why a repository was not searched (its status, or a search of it alone, says the rest)."""
    first = str(exc).strip().split("\n")[0]
    return first if ". " not in first else first.split(". ")[0] + "."
