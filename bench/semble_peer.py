"""semble 0.7.0's words-only search ("semble-bm25") over the semble benchmark's repositories: the peer of
``bench/semble.py``, run by that script with the Python of semble's own venv (never with ours).

Why a stand-in model: semble's code model is on a model hub this machine cannot reach. With ``alpha=0.0`` the
dense leg weighs nothing (semble's own "semble-bm25" ablation: BM25 plus its code-aware ranking), but semble
still embeds every chunk and the query, so the model only has to return vectors of a fixed size. Read in
semble 0.7.0: every model load goes through ``semble.index.dense._load_cached(model_path)`` (called by
``load_model``, which ``SembleIndex.from_path`` calls), and the model is used only through ``.dim`` and
``.encode(texts, **options)``. Replacing that one function gives every caller the stand-in; nothing is
downloaded. The vectors are seeded random numbers: a chunk found only by the dense leg scores
``alpha * rrf = 0`` and semble drops it, so they cannot change the ranking.

Usage (``bench/semble.py`` does this)::

    <semble venv>/bin/python -P bench/semble_peer.py REQUEST.json RESULT.json

``-P`` (Python 3.11+) keeps ``bench/`` off ``sys.path``: there ``import semble`` would find ``bench/semble.py``.

REQUEST: ``{"seed": 0, "dim": 256, "top_k": 10, "repos": [{"name": ..., "root": ..., "queries": [...]}]}``.
RESULT: per repository the index's build time and size, and per query the ranked chunks of
``search(query, top_k=10, alpha=0.0)`` (paths relative to the root), its wall time in ms (warm: one
throwaway search per repository first), and the bytes of semble's default MCP answer for the query (its
``search`` tool: top 5, the first 10 lines of each chunk, ``format_results`` as JSON; same ``alpha=0.0``).

Set ``SEMBLE_CACHE_LOCATION`` and ``XDG_CACHE_HOME`` to private folders: semble appends its "savings"
statistics to the first on every search (``semble.stats``), and semble-grammars extracts its tree-sitter
libraries under the second; both would otherwise write into the user's ``~/.cache/semble``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import semble
import semble.index.dense
from semble import SembleIndex
from semble.utils import format_results

STAND_IN_NAME = "onetool-code-bench/random-stand-in"
# semble's MCP `search` tool defaults (semble 0.7.0, semble/mcp.py): top_k=5, max_snippet_lines=10.
MCP_TOP_K = 5
MCP_SNIPPET_LINES = 10


class StandInModel:
    """Fixed-size seeded random vectors in place of semble's static embedding model."""

    def __init__(self, dim: int, seed: int) -> None:
        self.dim = dim
        self._rng = np.random.default_rng(seed)

    def encode(self, texts: list[str], **_options: Any) -> np.ndarray:
        return self._rng.standard_normal((len(texts), self.dim)).astype(np.float32)


def relative(path: str, root: Path) -> str:
    """semble stores paths relative to the root it indexed; make sure of it (an absolute one is cut)."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate.resolve().relative_to(root.resolve()).as_posix()
    return candidate.as_posix()


def run_repo(repo: dict[str, Any], top_k: int) -> dict[str, Any]:
    root = Path(repo["root"])
    started = time.perf_counter()
    index = SembleIndex.from_path(root)
    index_seconds = time.perf_counter() - started
    queries: list[str] = repo["queries"]
    if queries:
        index.search(queries[0], top_k=top_k, alpha=0.0)  # warm: the first search pays one-time costs
    answers = []
    for query in queries:
        t0 = time.perf_counter()
        results = index.search(query, top_k=top_k, alpha=0.0)
        ms = (time.perf_counter() - t0) * 1000
        mcp = index.search(query, top_k=MCP_TOP_K, alpha=0.0)
        answer = json.dumps(format_results(query, mcp, MCP_SNIPPET_LINES)) if mcp else '{"error": "No results found."}'
        answers.append(
            {
                "chunks": [
                    {
                        "path": relative(r.chunk.file_path, root),
                        "start_line": r.chunk.start_line,
                        "end_line": r.chunk.end_line,
                    }
                    for r in results
                ],
                "ms": ms,
                "answer_bytes": len(answer.encode("utf-8")),
            }
        )
    return {
        "index_seconds": index_seconds,
        "chunks": len(index.chunks),
        "files": index.stats.indexed_files,
        "answers": answers,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: semble_peer.py REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    request = json.loads(Path(argv[0]).read_text())
    model = StandInModel(int(request.get("dim", 256)), int(request.get("seed", 0)))
    semble.index.dense._load_cached = lambda _model_path: model  # the one place semble loads its model
    out: dict[str, Any] = {"semble": semble.__version__, "model": STAND_IN_NAME, "repos": {}}
    top_k = int(request.get("top_k", 10))
    for repo in request["repos"]:
        started = time.perf_counter()
        out["repos"][repo["name"]] = run_repo(repo, top_k)
        seconds = time.perf_counter() - started
        print(f"[semble-peer] {repo['name']}: {len(repo['queries'])} queries in {seconds:.1f} s", file=sys.stderr)
    Path(argv[1]).write_text(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
