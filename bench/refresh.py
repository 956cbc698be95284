"""What a change of a live index costs us: refresh time against change size (1, 10, 100 edited files) on Django
5.1.4 as the real ChunkHound 6.1.0 indexed it (about 80,000 chunks; ``django_corpus.py``), before (the state
read whole, as main did) and after (read as a delta), in place and from a private copy beside a writer.

For each size: N Python files of a private copy of the project get a new function each, the real
``chunkhound index`` re-indexes them, and then, each search a fresh process of our command line (hybrid, the
query embedded by the same dense test vectors through a local server). Each search asks a question about the new
function (``question``), since a query that only names it is answered without the embeddings request and the
``openai`` import that other searches pay for. Measured:

- first: the first search after the change (the refresh included), then second: the one after it;
- warm first: the same first search again, its delta snapshot removed, once the first has put what a search
  reads back in the page cache (these VMs let go of it within about a minute, so after ChunkHound's minutes-long
  run the first search reads Python's modules and the snapshot from disk);
- whole: the same first search with an empty cache directory, which reads the state whole (what main paid at
  every change);
- the control: a pause as long as ChunkHound's run, no change, then the first search and the one after it (what
  a pause alone costs, the page cache having let go of the files a search reads);
- then one more file edited and indexed, and the first search while a process holds the index read-write (as
  ``chunkhound mcp`` does): the copy, its time, and the delta read from it.

Each first search starts once the file has been quiet for ``QUIET_SECONDS`` (a search started sooner waits
for that, by design).

Run from the repository root (the index is built once, ~20 minutes; then ~25 minutes)::

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

from onetool_code import settings  # noqa: E402
from onetool_code.index.live import QUIET_SECONDS  # noqa: E402
from onetool_code.search import embeddings  # noqa: E402

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


def question(name: str) -> str:
    """A query that names the function and asks about it, so that it is embedded (``ranking.names_only``)."""
    return f"what does {name} return"


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


def warm_server(root: Path, base_url: str) -> None:
    """One embeddings request, so that the test server's own pages are in memory."""
    embeddings.embed(["warm"], settings.resolve(path=str(root), base_url=base_url))


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
        ours(root, "how does QuerySet bulk_create insert many rows", url, cache)
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
            time.sleep(QUIET_SECONDS)  # a file ChunkHound wrote this instant is read once quiet (README: Snapshots)
            first, out = ours(root, question(names[-1]), url, cache)
            assert names[-1] in out, out[:500]
            after = snapshot_status(root, cache)["snapshot"]
            shutil.rmtree(after["folder"])  # the delta, read again now that a search has warmed the page cache
            warm, _ = ours(root, question(names[-1]), url, cache)
            second, _ = ours(root, question(names[0]), url, cache)
            whole_cache = bench / "refresh-whole"
            shutil.rmtree(whole_cache, ignore_errors=True)
            whole, _ = ours(root, question(names[-1]), url, whole_cache)
            shutil.rmtree(whole_cache, ignore_errors=True)
            rows.append(
                {
                    "files": size,
                    "chunkhound_index_s": index_s,
                    "first_s": first,
                    "warm_first_s": warm,
                    "second_s": second,
                    "whole_s": whole,
                    "delta_chunks": after["delta_chunks"],
                    "held_s": after["read_seconds"],
                    "snapshots_bytes": disk(cache / "snapshot"),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        # The control: the same pause as ChunkHound's run, with no change. On these VMs the page cache lets go of
        # what a search reads (Python's modules, the snapshot) within about a minute, so the first search after
        # any pause pays for reading them again: that share of "first / after" is not the refresh's.
        time.sleep(rows[-1]["chunkhound_index_s"])
        warm_server(root, url)  # as ChunkHound's run leaves it, so that only our side is cold
        idle_first, _ = ours(root, question(names[0]), url, cache)
        idle_second, _ = ours(root, question(names[0]), url, cache)
        names = edit(root, 1, "b1")
        chunkhound.index(root, url, timeout=3600)
        db = root / ".chunkhound" / "db" / "chunks.db"
        with chunkhound.hold_write_lock(db):
            time.sleep(QUIET_SECONDS)
            copied, out = ours(root, question(names[-1]), url, cache)
            assert names[-1] in out, out[:500]
            held = snapshot_status(root, cache)["snapshot"]
    print(json.dumps(held), flush=True)
    print()
    print(
        "| files edited | ChunkHound index | first search after (delta) | the same, page cache warm | the one after "
        "| first / after | warm first / after | before: read whole | delta chunks | index held | snapshots on disk |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['files']} | {r['chunkhound_index_s']:.0f} s | {r['first_s']:.2f} s | {r['warm_first_s']:.2f} s | "
            f"{r['second_s']:.2f} s | {r['first_s'] / r['second_s']:.2f}x | {r['warm_first_s'] / r['second_s']:.2f}x | "
            f"{r['whole_s']:.1f} s | {r['delta_chunks']:,} | {r['held_s']:.2f} s | {r['snapshots_bytes'] / 1e6:,.0f} MB |"
        )
    print()
    print(
        f"No change, after a pause of {rows[-1]['chunkhound_index_s']:.0f} s: first search {idle_first:.2f} s, the one "
        f"after {idle_second:.2f} s ({idle_first / idle_second:.2f}x)."
    )
    print(
        f"Beside a writer (1 file): first search {copied:.2f} s, of which the copy of {db.stat().st_size / 1e6:,.0f} "
        f"MB {held['copy_seconds']:.2f} s and the delta of {held['delta_chunks']:,} chunks read from it "
        f"{held['read_seconds']:.2f} s; the copy needs that much free space, and is deleted after."
    )


if __name__ == "__main__":
    main()
