"""The hybrid-speed corpus (``hybrid_speed.py``: Django, SymPy, three.js and RxJS, 85,535 chunks by our
indexer) indexed by the real ChunkHound 6.1.0, with the same dense 1536-dim vectors from the test embeddings
server: the index ``search_speed.py --root`` measures against ChunkHound's own SQL.

Why: the speed targets are stated for a real ChunkHound index of 80k+ chunks; ChunkHound chunks the corpus its
own way, and its file carries its own layout and its HNSW index.

Run from the repository root (about half an hour on 2 cores; prints the project root when done)::

    .venv-test/bin/python bench/chunkhound_corpus.py
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import hybrid_speed  # noqa: E402
from tooling.chunkhound_env import ensure_chunkhound  # noqa: E402


def main() -> None:
    cache = hybrid_speed.cache_dir()
    hybrid_speed.ensure_corpus(cache)
    source = hybrid_speed.corpus_root(cache)
    root = cache / f"corpus-{hybrid_speed.CORPUS_VERSION}-chunkhound"
    marker = root.with_name(root.name + ".complete")
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".chunkhound"))
        started = time.perf_counter()
        with hybrid_speed.dense_server() as server:
            ensure_chunkhound().index(root, server.base_url, timeout=6 * 3600)
        marker.write_text(f"{time.perf_counter() - started:.0f} s\n")
    print(root)


if __name__ == "__main__":
    main()
