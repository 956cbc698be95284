"""A workspace of the semble dev split's 14 repositories: does a query of repository X, searched over all 14, still
find X's gold files first? And which fusion of the repositories' rankings keeps it so?

Why: a workspace search fuses the rankings of several indexes (``onetool_code/answer/workspace.py``, ``fuse``). BM25 and
cosine scores of different corpora are not comparable; the hybrid score is rank-based. This script measures, on
the public semble benchmark's development split (the repositories and the real ChunkHound 6.1.0 indexes that
``bench/semble.py`` sets up, no vectors: hybrid answers by words with its priors), every query three ways:

- **alone**: ``search(query=q, path=X)``, as ``bench/semble.py`` scores it (the number to keep);
- **workspace, by score and words**: ``search(query=q, path=[all 14])`` as the product answers it: each
  repository's list fused by its hits' fused hybrid score times what the query's words say of the repository
  (``fuse``, ``_about``);
- **workspace, by score**: the same by the fused score alone;
- **workspace, by rank**: the same with the lists interleaved by rank, ties by the score as a share of its
  repository's best (reciprocal-rank fusion of lists that share no hit; what ``fuse`` does for the modes whose
  scores are raw). Chosen here by replacing ``workspace.fuse`` for the run: a bench, not the product.

A workspace answer's hit counts only when it is from X (its ``repository`` label) and matches a target; hits of
the other repositories take places in the top 10, as they would for an agent. Scoring is ``bench/semble.py``'s
(NDCG@10, R@1, MRR@10; per repository, then the mean over repositories). Also the median wall time of a warm
search, alone and over the workspace, and the process's peak resident memory. Our snapshots go to a fresh
temporary ``ONETOOL_CODE_CACHE_DIR``.

Run from the repository root after ``bench/semble.py --setup-only`` (about 1 minute on 2 cores)::

    .venv-test/bin/python bench/workspace.py
    .venv-test/bin/python bench/workspace.py --queries-per-repo 5

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import semble

import onetool_code
from onetool_code import settings
from onetool_code.answer import workspace

WAYS = ("alone", "workspace, by score and words", "workspace, by score", "workspace, by rank")
# Each workspace way: (fused by score, the query's words weigh each repository).
FUSIONS = {WAYS[1]: (True, True), WAYS[2]: (True, False), WAYS[3]: (False, False)}


def _files(result: object, label: str | None) -> list[str]:
    """The answer's files in rank order; a hit of another repository is a file that matches no target."""
    if not isinstance(result, dict) or not isinstance(result.get("results"), list):
        raise SystemExit(f"search failed: {result}")
    paths = []
    for hit in result["results"]:
        mine = label is None or hit.get("repository") == label
        paths.append(str(hit["file_path"]) if mine else f"<{hit['repository']}>/{hit['file_path']}")
    return semble.distinct_files(paths)


def _timed(search: Callable[[], object]) -> tuple[object, float]:
    started = time.perf_counter()
    result = search()
    return result, (time.perf_counter() - started) * 1000


def run(roots: dict[str, Path], queries: dict[str, list[semble.Query]]) -> dict[str, Any]:
    """Every query, every way: scores per repository and the latencies."""
    paths = [str(root) for root in roots.values()]
    labels = dict(zip(roots, settings.labels([root.name for root in roots.values()]), strict=True))
    product = workspace.fuse
    scored: dict[str, dict[str, list[tuple[semble.Query, dict[str, Any]]]]] = {w: {} for w in WAYS}
    ms: dict[str, list[float]] = {"alone": [], "workspace": []}
    for name, root in roots.items():  # warm: each repository's snapshot read once, alone and in the workspace
        onetool_code.search(query=queries[name][0].text, path=str(root), format="json")
    onetool_code.search(query="warm up", path=paths, format="json")
    for name, qs in queries.items():
        for q in qs:
            result, took = _timed(
                lambda q=q, name=name: onetool_code.search(query=q.text, path=str(roots[name]), format="json")
            )
            ms["alone"].append(took)
            scored["alone"].setdefault(name, []).append((q, semble.score(q, _files(result, None))))
            for way, (by_score, words) in FUSIONS.items():
                workspace.fuse = functools.partial(_forced, product, by_score, words)  # type: ignore[assignment]
                try:
                    result, took = _timed(lambda q=q: onetool_code.search(query=q.text, path=paths, format="json"))
                finally:
                    workspace.fuse = product  # type: ignore[assignment]
                if way == WAYS[1]:
                    ms["workspace"].append(took)
                scored[way].setdefault(name, []).append((q, semble.score(q, _files(result, labels[name]))))
    per_way = {w: {name: semble.repo_means(s) for name, s in scored[w].items()} for w in WAYS}
    return {"per_way": per_way, "overall": {w: semble.overall(per_way[w]) for w in WAYS}, "ms": ms}


def _forced(
    product: Callable[..., Any],
    scored: bool,
    by_words: bool,
    lists: Sequence[Any],
    *,
    stems: Sequence[str],
    shares: Sequence[dict[str, float]],
    **_: Any,
) -> Any:
    """``workspace.fuse`` with the fusion this run measures, whatever the mode asked for."""
    return product(lists, by_score=scored, stems=stems if by_words else (), shares=shares if by_words else ())


def markdown(summary: dict[str, Any], names: Sequence[str]) -> str:
    out = [
        "| repository | " + " | ".join(f"{w} NDCG@10 | R@1" for w in WAYS) + " |",
        "|---|" + "---:|---:|" * len(WAYS),
    ]
    for name in [*names, "mean"]:
        cells = []
        for w in WAYS:
            m = summary["overall"][w] if name == "mean" else summary["per_way"][w][name]
            cells.append(f"{m['ndcg10']:.3f} | {m['r1']:.2f}")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    ms = summary["ms"]
    out.append("")
    out.append(
        f"Median warm search: alone {statistics.median(ms['alone']):.0f} ms, over the {len(names)}-repository "
        f"workspace {statistics.median(ms['workspace']):.0f} ms ({len(ms['alone'])} queries); resident memory at "
        f"most {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=semble.DEFAULT_DATA, help="the benchmark's folder")
    parser.add_argument("--cache-dir", type=Path, help="bench/semble.py's setup cache")
    parser.add_argument("--queries-per-repo", type=int, help="the first N queries of each repository")
    args = parser.parse_args(argv)
    cache = (args.cache_dir or semble.default_cache_dir()).expanduser().resolve()
    repos = semble.load_repos(args.data.resolve())
    roots = {r.name: r.root(cache) for r in repos}
    missing = [name for name, root in roots.items() if not (root / ".chunkhound" / "db" / "chunks.db").exists()]
    if missing:
        print(f"Error: not set up ({', '.join(missing)}): run bench/semble.py --setup-only", file=sys.stderr)
        return 1
    queries = {r.name: semble.load_queries(args.data.resolve(), r.name)[: args.queries_per_repo] for r in repos}
    for name in list(os.environ):
        if name.startswith(semble._SCRUBBED_PREFIXES):
            del os.environ[name]
    with tempfile.TemporaryDirectory() as snapshots:
        os.environ["ONETOOL_CODE_CACHE_DIR"] = snapshots
        summary = run(roots, queries)
    print(f"# Workspace search over the semble dev split ({onetool_code.__file__})\n")
    print(markdown(summary, list(roots)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
