"""Speed of the default search against a semantic one, warm, at scale, the local embedding call included (issue 25).

Why: the default (hybrid) ranking reads more than a semantic search does (the lexical list and the named
definitions, each list four times deeper to keep ten hits of a file at most, the files' evidence); its target is
at most 1.5x a warm semantic search in the same process. Here both go through the library as an agent's call
does (``api.run_search``: embedding, ranking, shaping the text answer), on Django 5.1.4 as the real ChunkHound
6.1.0 indexed it (``bench/django_corpus.py``: 109,494 chunks, 1536-dim dense test vectors), with the queries of
``bench/scale_queries.json`` (names, ``Class.method``, questions, error messages). The embeddings server is the
test server (``tests/openai_server.py``) on 127.0.0.1 in this process, so its time is a local call's.

Each query is searched once first (warm: snapshot mapped, lexical index loaded, pages in memory), then the modes
alternate query by query, ``--reps`` times each; a query's time is its median, the report gives the median
and the 90th percentile over queries. Another row answers hybrid with the embeddings server refused (a stopped
local server): the fallback to words, next to a lexical search; another with the server answering after
``--api-ms`` (200 by default), as a hosted API does. The hybrid rows are split by query: those that only name things
(``ranking.names_only``) ask for no vectors when the words find them.

Run from the repository root::

    .venv-test/bin/python bench/django_corpus.py       # once
    .venv-test/bin/python bench/default_speed.py --blas-threads 1

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--blas-threads", type=int, help="OPENBLAS_NUM_THREADS (set before numpy is imported)")
    parser.add_argument("--api-ms", type=float, default=200.0, help="the hosted-like server's time per request")
    args = parser.parse_args(argv)
    if args.blas_threads:
        os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
    import django_corpus
    import hybrid_speed

    from onetool_code import api
    from onetool_code.search import ranking

    root = str(django_corpus.ensure())
    queries = [q["query"] for q in json.loads((BENCH / "scale_queries.json").read_text())["queries"]]
    with socket.socket() as probe:  # a port nothing listens on: a refused connection
        probe.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with hybrid_speed.dense_server() as server:
        server.slow_seconds = args.api_ms / 1000
        modes = {
            "semantic": {"mode": "semantic", "base_url": server.base_url},
            "hybrid (default)": {"mode": "hybrid", "base_url": server.base_url},
            "lexical": {"mode": "lexical"},
            "hybrid, embeddings server refused": {"mode": "hybrid", "base_url": refused},
            f"hybrid, embeddings API answering in {args.api_ms:.0f} ms": {
                "mode": "hybrid",
                "base_url": server.url("slow"),
            },
        }
        for query in queries:  # warm
            for options in modes.values():
                api.run_search(query=query, path=root, **options)
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for query in queries:
            samples: dict[str, list[float]] = {mode: [] for mode in modes}
            for _ in range(args.reps):
                for mode, options in modes.items():
                    started = time.perf_counter()
                    api.run_search(query=query, path=root, **options)
                    samples[mode].append((time.perf_counter() - started) * 1000)
            for mode in modes:
                times[mode].append(statistics.median(samples[mode]))
    semantic = statistics.median(times["semantic"])
    names = [ranking.names_only(query) for query in queries]
    print(f"Django 5.1.4 as ChunkHound indexed it ({root}), {len(queries)} queries, median of {args.reps} each\n")
    print("| mode | median ms | p90 ms | / semantic |")
    print("|---|---:|---:|---:|")
    for mode, values in times.items():
        rows = {"": values}
        if mode.startswith("hybrid"):
            rows[f": the {sum(names)} names only"] = [v for v, name in zip(values, names, strict=True) if name]
            rows[f": the {len(names) - sum(names)} others"] = [
                v for v, name in zip(values, names, strict=True) if not name
            ]
        for part, chosen in rows.items():
            median = statistics.median(chosen)
            p90 = statistics.quantiles(chosen, n=10)[-1]
            print(f"| {mode}{part} | {median:.1f} | {p90:.1f} | {median / semantic:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(BENCH))
    sys.exit(main())
