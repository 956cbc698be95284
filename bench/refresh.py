"""What a change of a live index costs us: refresh time against change size (1, 10, 100 edited files) on Django
5.1.4 as the real ChunkHound 6.1.0 indexed it (about 80,000 chunks; ``django_corpus.py``), before (the state
read whole, as main did) and after (read as a delta), in place and from a private copy beside a writer.

For each size: N Python files of a private copy of the project get a new function each, the real
``chunkhound index`` re-indexes them, and then, each search a fresh process of our command line (hybrid, the
query embedded by the same dense test vectors through a local server):

- first: the first search after the change (the refresh included), then second: the one after it;
- whole: the same first search with an empty cache directory, which reads the state whole (what main paid at
  every change);
- copy: N more files edited and indexed, then the first search while a process holds the index read-write (as
  ``chunkhound mcp`` does): the copy, its time, and the delta read from it.

Run from the repository root (the index is built once, ~15 minutes; then ~10 minutes)::

    .venv-test/bin/python bench/refresh.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the dense test server's threads, each with OpenBLAS's pool

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import django_corpus  # noqa: E402
import hybrid_speed  # noqa: E402
from tooling.chunkhound_env import ensure_chunkhound  # noqa: E402

SIZES = (1, 10, 100)


def prepare(work: Path) -> Path:
    """A private copy of the indexed project (ChunkHound refuses a copy whose root sidecar names another root:
    the sidecar is rewritten for the copy)."""
    source = django_corpus.ensure()
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    sidecar = work / ".chunkhound" / "db" / "chunks.db.root.json"
    sidecar.write_text(json.dumps({"version": 1, "indexed_root_path": str(work)}))
    return work


def edit(root: Path, count: int, run: str) -> list[str]:
    """Append a new function to ``count`` Python files of the framework (the same files for every run)."""
    files = sorted((root / "django").rglob("*.py"))[:: max(1, 3000 // 100)][:count]
    names = []
    for i, path in enumerate(files):
        name = f"refresh_bench_{run}_{i}"
        with path.open("a") as f:
            f.write(f"\n\ndef {name}():\n    return {i}\n")
        names.append(name)
    return names


def ours(root: Path, query: str, base_url: str, cache: Path) -> tuple[float, str]:
    env = {**os.environ, "ONETOOL_CODE_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "search", query, "--path", str(root), "--base-url", base_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    return seconds, done.stdout


def snapshot_status(root: Path, cache: Path) -> dict:
    env = {**os.environ, "ONETOOL_CODE_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", "status", "--json", "--path", str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout)


def disk(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    chunkhound = ensure_chunkhound()
    bench = django_corpus.cache_dir()
    root = prepare(bench / "refresh-work")
    cache = bench / "refresh-cache"
    shutil.rmtree(cache, ignore_errors=True)
    rows = []
    with hybrid_speed.dense_server() as server:
        url = server.base_url
        started = time.perf_counter()
        ours(root, "QuerySet bulk_create", url, cache)
        first_read = time.perf_counter() - started
        status = snapshot_status(root, cache)
        print(
            f"index: {status['chunks']:,} chunks, {status['size_bytes'] / 1e6:,.0f} MB; first read {first_read:.1f} s"
        )
        for size in SIZES:
            names = edit(root, size, f"a{size}")
            started = time.perf_counter()
            chunkhound.index(root, url, timeout=3600)
            index_s = time.perf_counter() - started
            first, out = ours(root, names[-1], url, cache)
            assert names[-1] in out, out[:500]
            after = snapshot_status(root, cache)["snapshot"]
            second, _ = ours(root, names[0], url, cache)
            whole_cache = bench / "refresh-whole"
            shutil.rmtree(whole_cache, ignore_errors=True)
            whole, _ = ours(root, names[-1], url, whole_cache)
            shutil.rmtree(whole_cache, ignore_errors=True)
            names = edit(root, size, f"b{size}")
            chunkhound.index(root, url, timeout=3600)
            db = root / ".chunkhound" / "db" / "chunks.db"
            with chunkhound.hold_write_lock(db):
                copied, out = ours(root, names[-1], url, cache)
                assert names[-1] in out, out[:500]
                held = snapshot_status(root, cache)["snapshot"]
            rows.append(
                {
                    "files": size,
                    "chunkhound_index_s": index_s,
                    "first_s": first,
                    "second_s": second,
                    "whole_s": whole,
                    "delta_chunks": after["delta_chunks"],
                    "held_s": after["read_seconds"],
                    "copy_first_s": copied,
                    "copy_s": held["copy_seconds"],
                    "copy_delta_chunks": held["delta_chunks"],
                    "copy_bytes": db.stat().st_size,
                    "snapshots_bytes": disk(cache / "snapshot"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    print()
    print(
        "| files edited | ChunkHound index | first search after (delta) | the one after | first / after | before: read whole | delta chunks | index held | beside a writer: first search | copy | copy size | snapshots on disk |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['files']} | {r['chunkhound_index_s']:.1f} s | {r['first_s']:.2f} s | {r['second_s']:.2f} s | "
            f"{r['first_s'] / r['second_s']:.2f}x | {r['whole_s']:.1f} s | {r['delta_chunks']:,} | {r['held_s']:.2f} s | "
            f"{r['copy_first_s']:.2f} s | {r['copy_s']:.2f} s | {r['copy_bytes'] / 1e6:,.0f} MB | "
            f"{r['snapshots_bytes'] / 1e6:,.0f} MB |"
        )


if __name__ == "__main__":
    main()
