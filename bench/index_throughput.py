"""Index throughput of the optional indexer: files/s and chunks/s, without and with embeddings.

Embeddings come from the local test server (tests/openai_server.py, in a thread of this process), so the
"with embeddings" figure measures our batching and writing, not a network. Each build starts from a fresh copy
of the tree (no index). With ``--chunkhound``, ``chunkhound index --no-embeddings`` runs on another fresh copy
for comparison (its time includes its ~4 s start-up).

    python bench/index_throughput.py fixtures/project /tmp/dev/lib/python3.11/site-packages/openai --chunkhound
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from openai_server import serve  # noqa: E402

from onetool_code import settings  # noqa: E402
from onetool_code.indexer import build_index  # noqa: E402


def fresh_copy(tree: Path, workdir: Path, name: str) -> Path:
    """A project root holding the tree one level down: ChunkHound runs with the project as its working
    directory, where a package tree's own ``types/`` or ``typing/`` would shadow the standard library."""
    root = workdir / name
    shutil.copytree(tree, root / tree.resolve().name, ignore=shutil.ignore_patterns(".chunkhound"), symlinks=True)
    return root


def measure(tree: Path, workdir: Path, base_url: str | None) -> str:
    root = fresh_copy(tree, workdir, "with" if base_url else "without")
    summary = build_index(settings.resolve(path=str(root), base_url=base_url), embeddings=bool(base_url))
    label = "with embeddings   " if base_url else "without embeddings"
    return (
        f"  ours, {label}: {summary.files_indexed:,} files, {summary.chunks_written:,} chunks in "
        f"{summary.seconds:.2f} s = {summary.files_indexed / summary.seconds:,.0f} files/s, "
        f"{summary.chunks_written / summary.seconds:,.0f} chunks/s"
    )


def measure_chunkhound(tree: Path, workdir: Path) -> str:
    from tooling.chunkhound_env import ensure_chunkhound

    root = fresh_copy(tree, workdir, "chunkhound")
    started = time.perf_counter()
    run = ensure_chunkhound().index_no_embeddings(root)
    seconds = time.perf_counter() - started
    files = next((line for line in run.stdout.splitlines() if line.startswith("Processed:")), "?")
    chunks = next((line for line in run.stdout.splitlines() if line.startswith("Total chunks:")), "?")
    return f"  chunkhound index --no-embeddings: {files}, {chunks}, {seconds:.1f} s wall"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--chunkhound", action="store_true", help="also time chunkhound index --no-embeddings")
    args = parser.parse_args()
    with serve() as server:
        for tree in args.trees:
            print(tree.resolve())
            with tempfile.TemporaryDirectory(prefix="index-bench-") as workdir:
                print(measure(tree, Path(workdir), None), flush=True)
                print(measure(tree, Path(workdir), server.base_url), flush=True)
                if args.chunkhound:
                    print(measure_chunkhound(tree, Path(workdir)), flush=True)


if __name__ == "__main__":
    main()
