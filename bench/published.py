"""Issue 34's bench: an index published once to object storage, searched from a machine that has nothing.

Measured against a real S3 store (SeaweedFS on 127.0.0.1, from ``tests/tooling/seaweedfs.py``), every search a
fresh ``python -m onetool_code search --mode semantic`` process unless said otherwise:

- **publish**: ``python -m onetool_code publish`` (a consistent copy, our snapshot of it, the upload), and the
  bytes the version holds in the store;
- **first search, empty machine**: an empty cache directory, the store URL as ``--path``: the download included;
- **first local read**: today's first search of the local index with an empty cache directory (the snapshot made
  from the DuckDB file): what a machine pays now after ``chunkhound index``;
- **warm**: the median of 10 searches in one process, the local root against the store URL (refresh 60 s: no
  store request; once the float32 rows the first search left in the store are fetched whole in the background) and the store URL checked at every search (refresh 0: one conditional request each);
- **no-change check**: the bytes on the wire, both ways, of one check that finds the version unchanged (a TCP
  proxy in front of the store counts them).

Targets (issue 34): first search on an empty machine at least 3x faster than the first local read; warm the same
as local within noise; a no-change check under 2 KB.

Run from the repository root::

    .venv-test/bin/python bench/published.py                # the Django corpus of bench/django_corpus.py, when built
    .venv-test/bin/python bench/published.py --root PATH    # any project ChunkHound indexed with the dense vectors
    .venv-test/bin/python bench/published.py --sample       # the sample project: checks the script, tiny numbers

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

QUERY = "QuerySet bulk create with conflicts"
WARM_CALLS = 10


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "onetool_code", *args], capture_output=True, text=True, env=env, timeout=3600
    )
    seconds = time.perf_counter() - started
    assert done.returncode == 0, done.stderr[-2000:]
    return seconds, done.stdout


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


@contextlib.contextmanager
def embeddings(sample: bool) -> Iterator[str]:
    if sample:
        import openai_server

        with openai_server.serve() as server:
            yield server.base_url
    else:
        import hybrid_speed

        with hybrid_speed.dense_server() as server:
            yield server.base_url


def project(options: argparse.Namespace, work: Path, base_url: str) -> Path:
    if options.root:
        return Path(options.root).expanduser().resolve()
    if options.sample:
        from conftest import SAMPLE, build_index

        root = work / "project"
        shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
        build_index(root, base_url)
        return root
    import django_corpus

    root = django_corpus.cache_dir() / f"django-{django_corpus.VERSION}"
    if not root.with_name(root.name + ".complete").exists():
        sys.exit(f"the Django corpus is not built ({root}): run bench/django_corpus.py first, or give --root")
    return root


def warm(path: str, base_url: str, refresh: str, cache: Path | None = None) -> float:
    """Median seconds of a warm semantic search in this process (the first call, which maps, left out; for a
    store URL, the background fetch of the rows it starts waited for: searches then read no range)."""
    os.environ["ONETOOL_CODE_REFRESH"] = refresh
    import onetool_code

    onetool_code.search(query=QUERY, path=path, base_url=base_url, mode="semantic")
    if cache is not None:
        rows_fetched(cache)
    times = []
    for _ in range(WARM_CALLS):
        started = time.perf_counter()
        answer = onetool_code.search(query=QUERY, path=path, base_url=base_url, mode="semantic")
        times.append(time.perf_counter() - started)
        assert not answer.startswith("Error"), answer
    return statistics.median(times)


def rows_fetched(cache: Path, seconds: float = 600) -> None:
    """Wait for the background fetch of the float32 rows the first search left in the store (a warm search
    started it): warm searches are then timed as they run from then on, and the bytes the check counts are its own."""
    deadline = time.monotonic() + seconds
    pattern = "published/*/*/*/.chunkhound/db/*.snapshot-*/vectors-*/matrix.npy"
    while not list(cache.glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="an indexed project (default: the Django corpus)")
    parser.add_argument("--sample", action="store_true", help="the sample project, indexed here")
    options = parser.parse_args()
    from tooling.seaweedfs import running
    from tooling.tcp_proxy import Proxy

    with tempfile.TemporaryDirectory(prefix="bench-published-") as temporary:
        work = Path(temporary)
        with running(work / "weed") as store, embeddings(options.sample) as base_url:
            root = project(options, work, base_url)
            proxy = Proxy(int(store.endpoint.rsplit(":", 1)[1]))
            env = {**os.environ, **store.environment(), "ONETOOL_CODE_CACHE_DIR": str(work / "publisher")}
            url = "s3://indexes/bench/" + root.name
            publish_s, out = run(["publish", url, "--path", str(root)], env)
            stored = folder_bytes(work / "weed")  # the store's own files: what the version costs it
            search = ["search", QUERY, "--mode", "semantic", "--base-url", base_url]
            local_first, _ = run([*search, "--path", str(root)], {**env, "ONETOOL_CODE_CACHE_DIR": str(work / "local")})
            remote_env = {**env, "ONETOOL_CODE_CACHE_DIR": str(work / "reader")}
            remote_first, _ = run([*search, "--path", url], remote_env)
            os.environ.update({**store.environment(), "ONETOOL_CODE_CACHE_DIR": str(work / "reader")})
            os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
            local_warm = warm(str(root), base_url, "60")
            remote_warm = warm(url, base_url, "60", work / "reader")
            checked_warm = warm(url, base_url, "0")
            from onetool_code import published, settings

            proxy.reset()
            published.place(url, settings.store_environment())
            check = proxy.sent + proxy.received
            load = os.getloadavg()[0]
    print(f"## Published index: {root.name} ({out.strip()})\n")
    print(f"Machine: {os.cpu_count()} CPUs, load average {load:.1f} at the end; SeaweedFS on 127.0.0.1.\n")
    print("| measure | value |\n|---|---:|")
    print(f"| publish (copy, snapshot, upload) | {publish_s:.1f} s |")
    print(f"| bytes in the store (SeaweedFS's files) | {stored / 1e6:,.1f} MB |")
    print(f"| first search, empty machine, from the store (download included) | {remote_first:.2f} s |")
    print(f"| first search of the local index today (snapshot made from the file) | {local_first:.2f} s |")
    print(f"| first local / first from the store | {local_first / remote_first:.1f}x |")
    print(f"| warm search, local root (median of {WARM_CALLS}) | {local_warm * 1000:.1f} ms |")
    print(f"| warm search, store URL, refresh 60 s | {remote_warm * 1000:.1f} ms |")
    print(f"| warm search, store URL, checked at every search | {checked_warm * 1000:.1f} ms |")
    print(f"| bytes on the wire of a check finding no new version | {check:,} B |")
    print(
        json.dumps(
            {
                "publish_s": publish_s,
                "stored": stored,
                "remote_first_s": remote_first,
                "local_first_s": local_first,
                "local_warm_s": local_warm,
                "remote_warm_s": remote_warm,
                "checked_warm_s": checked_warm,
                "check_bytes": check,
            }
        )
    )


if __name__ == "__main__":
    main()
