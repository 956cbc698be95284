"""Several repositories in one search: each resolved, searched and shaped against its own root, their answers
fused into one ranked page; a repository that fails costs a note, not the answer.

Each repository keeps what one project has: its index location, its embedding provider and model, its key zone
and its ``.chunkhound.json`` (``settings.resolve`` per root); the filters apply to all. Repositories whose
indexes share a model share one embeddings request (``query_vectors.Shared``). Every result names its
repository by a label: its folder name, made unique when two are equal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from onetool_code import settings
from onetool_code.answer import report, shaping
from onetool_code.errors import OneToolCodeError
from onetool_code.names import query_tokens, stems_in
from onetool_code.request import Request
from onetool_code.search import Shared, names_first, rank


@dataclass(frozen=True)
class Found:
    """A workspace's page: results best first, each labelled; ``notice`` names the repositories that failed."""

    results: list[shaping.Result]
    next_offset: int | None
    notice: str | None


def search(found: Sequence[settings.Member], request: Request) -> Found:
    """One page over every repository: each searched for the first ``offset + limit`` results (its page filled
    as a single search fills it), shaped against its own root with no code yet, the lists fused (``fuse``),
    the page cut, and code included by the number of results of the whole answer."""
    shared = Shared()
    end = request.offset + request.limit
    each = replace(request, offset=0, limit=end, content="never", expand=None)
    # Names are looked for by words in every repository first: the vectors of the others, where they are not
    # defined, would only fill the answer with what their words mean (``search.names_first``).
    names = names_first(each)
    searched = _each(found, each, shared, unfound_by_meaning=False)
    if names and searched.lists and not any(searched.lists):
        searched = _each(found, each, shared, unfound_by_meaning=True)
    lists, notes, failed = searched.lists, searched.notes, searched.failed
    if not lists:
        raise settings.all_failed(failed)
    fused = fuse(lists, by_score=request.mode == "hybrid", stems=query_tokens(*request.queries), shares=searched.shares)
    # Each result's rank is its place in the fused list, before the results of a file are put together: a page
    # cut short by the budget then names an offset that skips nothing (``search.Ranked``).
    for position, result in enumerate(fused):
        result.rank = position
    page = shaping.by_file(fused[request.offset : end])
    shaping.describe(page, request)
    roots = {m.label: m.settings.project_root for m in found if m.settings is not None}
    shaping.include_content(page, request, roots)
    next_offset = end if not request.batch and (searched.more or len(fused) > end) else None
    for label, exc in failed:
        notes.setdefault(f"not searched: {_first_sentence(exc)}", []).append(label)
    # Said once for the repositories it is about: seven indexes without vectors are one line, not seven.
    said = "; ".join(f"{', '.join(named)}: {notice}" for notice, named in notes.items())
    return Found(page, next_offset, said or None)


@dataclass
class _Searched:
    """Each repository's results, labelled, and the share of its chunks that hold each of the query's words
    (``search.Ranked``); the notices, by the repositories they are about; the repositories that failed; whether
    any has more results past those."""

    lists: list[list[shaping.Result]] = field(default_factory=list)
    shares: list[dict[str, float]] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    failed: list[tuple[str, OneToolCodeError]] = field(default_factory=list)
    more: bool = False


def _each(found: Sequence[settings.Member], each: Request, shared: Shared, unfound_by_meaning: bool) -> _Searched:
    asked = shaping.asked(each)
    searched = _Searched()
    for member in found:
        if member.settings is None:
            assert member.problem is not None
            searched.failed.append((member.label, member.problem))
            continue
        try:
            ranked = rank(member.settings, asked, shared, unfound_by_meaning)
        except OneToolCodeError as exc:
            searched.failed.append((member.label, exc))
            continue
        results, following = shaping.fill(ranked.hits, each, member.settings.project_root, ranked.next_offset)
        for result in results:
            result.repository = member.label
        searched.lists.append(results)
        searched.shares.append(ranked.shares)
        searched.more = searched.more or following is not None
        if ranked.notice:
            searched.notes.setdefault(ranked.notice, []).append(member.label)
    return searched


def fuse(
    lists: Sequence[Sequence[shaping.Result]],
    *,
    by_score: bool,
    stems: Sequence[str],
    shares: Sequence[dict[str, float]],
) -> list[shaping.Result]:
    """One ranking from each repository's own, best first; ``stems``: the query's words (``names.query_tokens``),
    ``shares``: each repository's share of its chunks that hold each (``search.Ranked``), one per list.

    Hybrid (``by_score``): by each result's fused score times what the query's words say of its repository
    (``_about``). The fused score is rank-based (reciprocal ranks of the definitions named, the words and the
    meaning, plus structural priors), scaled so that a hit first in every list scores about 1 in any corpus:
    unlike BM25 or cosine, it says how sure its own repository is, so a repository whose definition the query
    names outranks the others' best guesses. But every repository's best guess for a query in words scores
    about 1; what tells them apart is which of them say the query's words that the others lack ("ZodError",
    "dependency injection"), and how much of their code says them. Measured on the semble dev split's 14
    repositories as one workspace (``bench/workspace.py``, 268 queries, a query's own repository scored):
    NDCG@10 0.78 with the words, 0.62 by the score alone, 0.24 interleaving the lists by rank (reciprocal-rank
    fusion of lists that share no hit), against 0.87 for each repository searched alone.

    The other modes' scores are raw (BM25, cosine of models that may differ, a regex's count) and not
    comparable across corpora: their lists are interleaved by rank, ties broken by the score as a share of its
    repository's best.
    """
    about = _about(lists, stems, shares)
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
ABOUT_DEPTH = 10  # the results of each repository that may say the query's words


def _about(
    lists: Sequence[Sequence[shaping.Result]], stems: Sequence[str], shares: Sequence[dict[str, float]]
) -> list[float]:
    """How much of the query (its ``stems``) each repository is about, 0..1: what its best single result says
    of it, times the square root of how much the repository holds the query's words.

    - Its best single result: of its first results, the one whose path and lines hold the most of the query's
      words, each word weighted by how few repositories hold it in those results (log((R + 1) / (holding +
      0.5))). A word every repository holds ("how", "request") tells little; one a repository alone holds
      tells which one the query is about. One result, not the ten together: ten of a repository's guesses
      gather the question's words from ten places, as any repository's do, where one that says them all is
      about it (``StringUtils.java`` for "null-safe string operations"). The path counts as the lexical index
      counts it (``stream/JsonWriter.java`` says "streaming JSON writer").
    - How much it holds them (``shares``: of each repository, the share of its chunks that hold each word):
      each word's share over the largest any repository has, weighted as above. Every web framework has a
      result that says "request logging middleware"; the one whose code says "middleware" most is about it
      (a repository's topics, as federated search picks collections: CORI's ``df``). The square root, because
      it is the weaker evidence: 14 repositories as one workspace (``bench/workspace.py``), NDCG@10 0.748 ->
      0.780 by the root, 0.775 by the share itself, 0.769 by its fourth root.
    """
    asked = frozenset(stems)
    held = [[_said(r) & asked for r in results[:ABOUT_DEPTH]] for results in lists]
    weights = {
        t: math.log((len(lists) + 1) / (n + 0.5))
        for t in asked
        if (n := sum(any(t in one for one in results) for results in held))
    }
    total = sum(weights.values())
    if not total:
        return [0.0] * len(lists)
    said = [max((sum(weights[t] for t in one) for one in results), default=0.0) / total for results in held]
    most = {t: max(share.get(t, 0.0) for share in shares) for t in weights}
    holds = [sum(w * share.get(t, 0.0) / most[t] for t, w in weights.items() if most[t]) / total for share in shares]
    return [s * math.sqrt(h) for s, h in zip(said, holds, strict=True)]


def _said(result: shaping.Result) -> frozenset[str]:
    """The stems a result's path and lines hold, split as the lexical index splits them."""
    return stems_in(result.file_path + "\n" + "\n".join(result.lines))


def status(found: Sequence[settings.Member]) -> list[tuple[str, report.StatusReport | str]]:
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


def _first_sentence(exc: Exception) -> str:
    """The gist of why a repository was not searched (its status, or a search of it alone, says the rest)."""
    first = str(exc).strip().split("\n")[0]
    return first if ". " not in first else first.split(". ")[0] + "."
