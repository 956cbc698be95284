"""Ten real repositories, each indexed by the real ChunkHound 6.1.0 into its own index, with the dense 1536-dim
test vectors of ``hybrid_speed.dense_server``: the corpus of the workspace scale bench (``workspace_scale.py``).

Why: issue 26 states the workspace speed target for 10 repositories totalling at least 300,000 chunks. The
repositories are real code from the package registries (pinned, SHA-256 checked): Django 5.1.4's source release
(``django_corpus.py``, 109,494 chunks), the wheels of pandas, SciPy, scikit-learn, NumPy, Matplotlib, SQLAlchemy
and Flask (Python, tests included where the wheel has them), and the ``src/`` of three.js (JavaScript) and RxJS
(TypeScript) from npm: big and small, as a workspace is.
The vectors are the test server's, not a real model's: a real model embeds 300,000 chunks in hours on 2 cores.

Run from the repository root (about 25 minutes the first time on 2 cores with ``--jobs 2``; prints each project root)::

    .venv-test/bin/python bench/workspace_corpus.py
    .venv-test/bin/python bench/workspace_corpus.py --jobs 2    # two ChunkHound runs at a time
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# The dense test server answers from many threads, each with OpenBLAS's own pool: past its thread limit it crashes.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import django_corpus  # noqa: E402
import hybrid_speed  # noqa: E402
from hybrid_speed import Package  # noqa: E402
from tooling.chunkhound_env import ensure_chunkhound  # noqa: E402

VERSION = 1  # bump when the packages or the recipe change, so an old index is never trusted
_WHEEL = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
PACKAGES = (
    Package(
        "pandas", "pypi", "pandas==2.2.3", f"pandas-2.2.3-{_WHEEL}",
        "c124333816c3a9b03fbeef3a9f230ba9a737e9e5bb4060aa2107a86cc0a497fc",
    ),
    Package(
        "scipy", "pypi", "scipy==1.14.1", f"scipy-1.14.1-{_WHEEL}",
        "fef8c87f8abfb884dac04e97824b61299880c43f4ce675dd2cbeadd3c9b466d2",
    ),
    Package(
        "numpy", "pypi", "numpy==2.1.3", f"numpy-2.1.3-{_WHEEL}",
        "bc6f24b3d1ecc1eebfbf5d6051faa49af40b03be1aaa781ebdadcbc090b4539b",
    ),
    Package(
        "scikit-learn", "pypi", "scikit-learn==1.5.2", f"scikit_learn-1.5.2-{_WHEEL}",
        "f8b0ccd4a902836493e026c03256e8b206656f91fbcc4fde28c57a5b752561f1",
    ),
    Package(
        "matplotlib", "pypi", "matplotlib==3.9.2", f"matplotlib-3.9.2-{_WHEEL}",
        "8912ef7c2362f7193b5819d17dae8629b34a95c58603d781329712ada83f9447",
    ),
    Package(
        "sqlalchemy", "pypi", "sqlalchemy==2.0.36", f"SQLAlchemy-2.0.36-{_WHEEL}",
        "2519f3a5d0517fc159afab1015e54bb81b4406c278749779be57a569d8d1bb0d",
    ),
    Package(
        "flask", "pypi", "flask==3.0.3", "flask-3.0.3-py3-none-any.whl",
        "34e815dfaa43340d1d15a5c3a02b8476004037eb4840b34910c6e21679d288f3",
    ),
    *(p for p in hybrid_speed.PACKAGES if p.name in ("three", "rxjs")),  # the hybrid-speed pins
)  # fmt: skip


def cache_dir() -> Path:
    """``~/.cache/onetool-code/bench/workspace`` (beside the semble repositories)."""
    return hybrid_speed.cache_dir().parent / "bench" / "workspace"


def _marker(root: Path) -> Path:
    """Beside the root, not in it (ChunkHound would index it); written last: the index is complete."""
    return root.with_name(root.name + ".complete.json")


def _counts(root: Path) -> dict[str, int]:
    """Files, chunks and 1536-dim vectors of ``root``'s index (read-only)."""
    import duckdb

    con = duckdb.connect(str(root / ".chunkhound" / "db" / "chunks.db"), read_only=True)
    try:
        one = lambda sql: con.execute(sql).fetchone()[0]  # type: ignore[index]  # noqa: E731
        return {
            "files": one("SELECT count(*) FROM files"),
            "chunks": one("SELECT count(*) FROM chunks"),
            "vectors": one(f"SELECT count(*) FROM embeddings_{hybrid_speed.DIMS}"),
        }
    finally:
        con.close()


def ensure_repo(package: Package, base_url: str) -> Path:
    """``package``'s project root, unpacked and indexed by ChunkHound if not done yet."""
    cache = cache_dir()
    parent = cache / f"repos-{VERSION}"
    root = parent / package.name
    if _marker(root).exists():
        return root
    archive = hybrid_speed.fetch(cache, package)
    shutil.rmtree(root, ignore_errors=True)
    parent.mkdir(parents=True, exist_ok=True)
    hybrid_speed.unpack(archive, package, parent)
    started = time.perf_counter()
    ensure_chunkhound().index(root, base_url, timeout=6 * 3600)
    seconds = time.perf_counter() - started
    marker = {"spec": package.spec, "index_seconds": round(seconds), **_counts(root)}
    _marker(root).write_text(json.dumps(marker, indent=2) + "\n")
    return root


def ensure(jobs: int = 1) -> list[Path]:
    """The 10 project roots, Django first (each built if missing)."""
    roots = [django_corpus.ensure()]
    with hybrid_speed.dense_server() as server, ThreadPoolExecutor(jobs) as pool:
        roots += pool.map(lambda package: ensure_repo(package, server.base_url), PACKAGES)
    return roots


def chunks(root: Path) -> int:
    """The chunk count of a root built here (its marker), else read from its index."""
    marker = _marker(root)
    if marker.exists():
        return int(json.loads(marker.read_text())["chunks"])
    return _counts(root)["chunks"]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="ChunkHound runs at a time (default 1)")
    for built in ensure(parser.parse_args().jobs):
        print(built)
