"""A million chunks on two cores (issue 38): first read, warm searches, memory and disk against ChunkHound's own
SQL and a bare numpy float32 scan of a matrix that size, for one or more copies of the library, in one run.

The index: Django 5.1.4 as the real ChunkHound 6.1.0 indexed it (``bench/django_corpus.py``, or any ChunkHound
project given by ``--source``), copied ``--copies`` times (13: about 1.06 M chunks) under folders ``copy-NN/``,
files hard-linked, ids shifted, every vector perturbed by a deterministic hash of (``--seed``, copy, id, index)
of amplitude ``--noise`` so that copies never tie. ``--copies 0`` measures the source index itself.

Each row is measured in its own process (its peak resident memory, ``VmHWM``, is its own; a first read's is also
summed with its lexical index's child process, sampled), with the snapshot
cache directory of that library copy emptied first:

- first read: ``live.view`` in a fresh process, the snapshot made from the DuckDB file; its bytes on disk;
- warm: every query of ``bench/scale_queries.json`` searched once, then once more in each mode through
  ``api.run_search`` (embedding call to the test server on 127.0.0.1 included), in ``--rounds`` processes per
  package alternating packages: a query's median over rounds, then median and max over queries;
- ChunkHound's SQL: its query on a connection held open, in its own venv's duckdb, the same query vectors
  (plus the median embedding call, timed here);
- numpy: ``matrix @ unit`` over the snapshot's float32 matrix, mapped and warm.

Run from the repository root (``--package`` repeated measures each library copy, e.g. before and after)::

    .venv-test/bin/python bench/million.py --package /work/main --package .

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO / "tests"), str(BENCH)]
VERSION = 1  # bump when the recipe changes, so an old copy is never trusted
CHUNKHOUND_PYTHON = Path.home() / ".cache" / "onetool-code" / "chunkhound-6.1.0" / "venv" / "bin" / "python"
MODES = ("hybrid", "semantic", "lexical")
MAX_RSS_GB = 11.0


def build(source: Path, copies: int, seed: int, noise: float, workdir: Path) -> Path:
    """The project root of ``copies`` perturbed copies of ``source``'s index (made once, kept in ``workdir``)."""
    import duckdb

    from onetool_code import schema

    root = workdir / f"million-{VERSION}-{copies}x-{seed}-{noise:g}"
    marker = root.with_name(root.name + ".complete")
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    db = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    db.parent.mkdir(parents=True)
    source_db = source / ".chunkhound" / "db" / schema.DB_FILE_NAME
    started = time.perf_counter()
    # Written in a storage version ChunkHound's own duckdb (1.5) reads, as ChunkHound would have written it.
    con = duckdb.connect(str(db), config={"memory_limit": "4GB", "storage_compatibility_version": "v1.4.0"})
    try:
        con.execute(f"ATTACH '{source_db}' AS src (READ_ONLY)")
        tables = [
            t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'src'").fetchall()
        ]
        dims = [int(t.removeprefix("embeddings_")) for t in tables if t.startswith("embeddings_")]
        for statement in (*schema.SCHEMA_DDL, *(s for d in dims for s in schema.embedding_ddl(d))):
            con.execute(statement)
        con.execute("INSERT INTO schema_version SELECT * FROM src.schema_version")
        shift = {t: con.execute(f"SELECT coalesce(max(id), 0) FROM src.{t}").fetchone()[0] for t in ("files", "chunks")}
        for k in range(copies):
            folder = f"copy-{k:02d}"
            print(f"copy {k + 1}/{copies}", file=sys.stderr)
            con.execute(
                f"INSERT INTO files BY NAME SELECT * REPLACE (id + {k * shift['files']} AS id, "
                f"'{folder}/' || path AS path) FROM src.files"
            )
            con.execute(
                f"INSERT INTO chunks BY NAME SELECT * REPLACE (id + {k * shift['chunks']} AS id, "
                f"file_id + {k * shift['files']} AS file_id) FROM src.chunks"
            )
            for d in dims:
                t = schema.embedding_table(d)
                top = con.execute(f"SELECT coalesce(max(id), 0) FROM src.{t}").fetchone()[0]
                noisy = (
                    f"list_transform(embedding, lambda x, i: (x + {noise} * ((hash({seed}, {k}, id, i) % 2000001)"
                    f"::DOUBLE / 1000000.0 - 1.0))::FLOAT)::FLOAT[{d}]"
                )
                con.execute(
                    f"INSERT INTO {t} BY NAME SELECT * REPLACE (id + {k * top} AS id, chunk_id + "
                    f"{k * shift['chunks']} AS chunk_id, {noisy} AS embedding) FROM src.{t}"
                )
            shutil.copytree(source, root / folder, copy_function=os.link, ignore=shutil.ignore_patterns(".chunkhound"))
        con.execute("CHECKPOINT")
    finally:
        con.close()
    marker.write_text(f"{time.perf_counter() - started:.0f} s\n")
    return root


# -- One row, in its own process ---------------------------------------------------------------------------------


def peak_mb(field: str = "VmHWM") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no /proc/self/status")


def run_first(root: str, base_url: str) -> dict[str, Any]:
    import onetool_code
    from onetool_code import settings
    from onetool_code.index import live

    started = time.perf_counter()
    resolved = settings.resolve(path=root, base_url=base_url)
    held = live.view(resolved.project_root, resolved.db_path).snapshot
    return {"seconds": time.perf_counter() - started, "rss_mb": peak_mb(), "package": onetool_code.__file__,
            "chunks": len(held.chunks)}  # fmt: skip


def run_warm(root: str, base_url: str, reps: int, limit: int) -> dict[str, Any]:
    from onetool_code import api

    queries = [q["query"] for q in json.loads((BENCH / "scale_queries.json").read_text())["queries"]][:limit]
    for query in queries:
        for mode in MODES:
            api.run_search(query=query, path=root, mode=mode, base_url=base_url)
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for query in queries:
        samples: dict[str, list[float]] = {mode: [] for mode in MODES}
        for _ in range(reps):
            for mode in MODES:
                started = time.perf_counter()
                api.run_search(query=query, path=root, mode=mode, base_url=base_url)
                samples[mode].append((time.perf_counter() - started) * 1000)
        for mode in MODES:
            times[mode].append(statistics.median(samples[mode]))
    return {"times": times, "rss_mb": peak_mb()}


def run_numpy(cache: str, reps: int) -> dict[str, Any]:
    import numpy as np

    (path,) = sorted(Path(cache).rglob("vectors-0/matrix.npy"))[:1]
    matrix = np.load(path, mmap_mode="r")
    rows_first = matrix.shape[0] > matrix.shape[1]
    unit = np.full(min(matrix.shape), 1 / np.sqrt(min(matrix.shape)), dtype=np.float32)
    scan = (lambda: matrix @ unit) if rows_first else (lambda: unit @ matrix)
    scan()
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        scan()
        samples.append((time.perf_counter() - started) * 1000)
    return {"ms": statistics.median(samples), "samples": samples, "bytes": int(matrix.nbytes)}


CHUNKHOUND_SCRIPT = """
import json, statistics, sys, time
import duckdb, numpy as np
db, vectors, provider, model, reps = sys.argv[1], np.load(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
con = duckdb.connect(db, read_only=True)
sql = '''SELECT c.id, c.symbol, c.code, c.chunk_type, c.start_line, c.end_line, f.path, f.language,
       array_cosine_similarity(e.embedding, ?::FLOAT[{dims}]) AS similarity
FROM embeddings_{dims} e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id
WHERE e.provider = ? AND e.model = ?
ORDER BY similarity DESC LIMIT 10 OFFSET 0'''.format(dims=vectors.shape[1])
con.execute(sql, [vectors[0].tolist(), provider, model]).fetchall()
times = []
for v in vectors:
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        con.execute(sql, [v.tolist(), provider, model]).fetchall()
        samples.append((time.perf_counter() - started) * 1000)
    times.append(statistics.median(samples))
print(json.dumps({"times": times, "duckdb": duckdb.__version__}))
"""


def _child(args: list[str], package: Path, cache: Path, python: str = sys.executable) -> dict[str, Any]:
    """One row in a fresh process, killed if its resident memory with its own children's (a first read's lexical
    index is built by one; ``_tree_rss_gb``) passes ``MAX_RSS_GB`` (a shared machine: the kernel's OOM killer would otherwise pick a
    process, maybe another's). The row's result gains that sum's peak, sampled every 0.2 s (``tree_rss_mb``)."""
    env = {**os.environ, "ONETOOL_CODE_CACHE_DIR": str(cache), "PYTHONPATH": f"{package}{os.pathsep}{BENCH}"}
    child = subprocess.Popen([python, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             cwd=package)  # fmt: skip
    peak = 0.0
    while child.poll() is None:
        peak = max(peak, _tree_rss_gb(child.pid))
        if peak > MAX_RSS_GB:
            child.kill()
            child.wait()
            return {"killed_gb": peak}
        time.sleep(0.2)
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"{args[:3]} failed ({child.returncode}):\n{err[-3000:]}")
    return {**json.loads(out.strip().splitlines()[-1]), "tree_rss_mb": peak * 1024}


def _tree_rss_gb(pid: int) -> float:
    """The resident memory of a process and of every process below it, in GB: each one's proportional share
    (``Pss``), so that pages both map (the rows' texts) count once."""
    total, todo = 0, [pid]
    while todo:
        at = todo.pop()
        try:
            rollup = Path(f"/proc/{at}/smaps_rollup").read_text().splitlines()
            total += next((int(line.split()[1]) for line in rollup if line.startswith("Pss:")), 0)
            for task in Path(f"/proc/{at}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total / 2**20


def chunkhound_sql(root: Path, base_url: str, workdir: Path, limit: int, reps: int) -> dict[str, Any]:
    """ChunkHound's query in its own duckdb, the vectors of the same queries; plus our median embedding call."""
    import duckdb
    import numpy as np
    import openai

    from onetool_code import schema

    db = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    con = duckdb.connect(str(db), read_only=True)
    try:
        dims, provider, model = con.execute(
            "SELECT dims, provider, model FROM embeddings_1536 LIMIT 1"
        ).fetchone()  # fmt: skip
    finally:
        con.close()
    client = openai.OpenAI(base_url=base_url, api_key="bench")
    queries = [q["query"] for q in json.loads((BENCH / "scale_queries.json").read_text())["queries"]][:limit]
    calls, vectors = [], []
    for query in queries:
        started = time.perf_counter()
        answer = client.embeddings.create(model=model, input=[query])
        calls.append((time.perf_counter() - started) * 1000)
        vectors.append(answer.data[0].embedding)
    path = workdir / "query-vectors.npy"
    np.save(path, np.asarray(vectors, dtype=np.float32))
    script = CHUNKHOUND_SCRIPT
    done = subprocess.run([str(CHUNKHOUND_PYTHON), "-c", script, str(db), str(path), provider, model, str(reps)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ChunkHound's SQL failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {**result, "embed_ms": statistics.median(calls), "dims": dims}


def measure(packages: list[Path], root: Path, base_url: str, workdir: Path, rounds: int, limit: int) -> dict[str, Any]:
    """First reads one package after the other; then warm rounds alternating packages, so that a shared machine's
    load falls on each alike (a query's time is its median over rounds)."""
    me = str(Path(__file__).resolve())
    results: dict[str, Any] = {}
    for i, package in enumerate(packages):
        cache = workdir / f"cache-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        print(f"first read: {package}", file=sys.stderr)
        first = _child([me, "--run", "first", "--root", str(root), "--base-url", base_url], package, cache)
        size = sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())
        print(f"first read: {json.dumps(first)}, {size / 1e9:.2f} GB on disk", file=sys.stderr)
        results[f"{i}: {package}"] = {"first": first, "bytes": size, "warm": [], "numpy": []}
    for r in range(rounds):
        for i, package in enumerate(packages):
            print(f"warm round {r + 1}/{rounds}: {package}", file=sys.stderr)
            cache, held = workdir / f"cache-{i}", results[f"{i}: {package}"]
            held["warm"].append(_child([me, "--run", "warm", "--root", str(root), "--base-url", base_url,
                                        "--reps", "1", "--queries", str(limit)], package, cache))  # fmt: skip
            held["numpy"].append(_child([me, "--run", "numpy", "--cache", str(cache), "--reps", "5"], package, cache))
    for held in results.values():
        runs = held.pop("warm")
        held["warm"] = {
            "times": {
                m: [statistics.median(q) for q in zip(*(run["times"][m] for run in runs), strict=True)] for m in MODES
            },
            "rss_mb": max(run["rss_mb"] for run in runs),
        }
        held["numpy"] = {"ms": statistics.median(run["ms"] for run in held["numpy"])}
    return results


def report(name: str, results: dict[str, dict[str, Any]], chunkhound: dict[str, Any]) -> list[str]:
    labels = list(results)
    sql = statistics.median(chunkhound["times"]) + chunkhound["embed_ms"]
    lines = [f"**{name}**", "", "| | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]

    def row(label: str, cell: Any) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(results[k]) for k in labels) + " |")

    row("package", lambda r: f"`{Path(r['first']['package']).parent.parent.name}`")
    row("chunks", lambda r: f"{r['first']['chunks']:,}")
    row("first read, s", lambda r: f"{r['first']['seconds']:.1f}")
    row("peak RSS during first read, GB", lambda r: f"{r['first']['rss_mb'] / 1024:.2f}")
    row("... with its lexical child (sampled), GB", lambda r: f"{r['first'].get('tree_rss_mb', 0) / 1024:.2f}")
    for mode in MODES:
        row(f"warm {mode}, median / max ms",
            lambda r, m=mode: f"{statistics.median(r['warm']['times'][m]):.1f} / {max(r['warm']['times'][m]):.1f}")  # fmt: skip
    row("peak RSS of the searching process, GB", lambda r: f"{r['warm']['rss_mb'] / 1024:.2f}")
    row("snapshot on disk, GB", lambda r: f"{r['bytes'] / 1e9:.2f}")
    row("numpy float32 scan, ms (mapped, warm)", lambda r: f"{r['numpy']['ms']:.1f}")
    row(
        "default median / numpy scan",
        lambda r: f"{statistics.median(r['warm']['times']['hybrid']) / r['numpy']['ms']:.2f}x",
    )
    row("ChunkHound SQL / default median",
        lambda r: f"{sql / statistics.median(r['warm']['times']['hybrid']):.1f}x")  # fmt: skip
    lines += [
        "",
        f"ChunkHound's SQL (its duckdb {chunkhound['duckdb']}, connection open): median {statistics.median(chunkhound['times']):.0f} ms, "
        f"min {min(chunkhound['times']):.0f}, max {max(chunkhound['times']):.0f}; embedding call {chunkhound['embed_ms']:.1f} ms.",
        "",
    ]  # fmt: skip
    return lines


def main() -> int:
    global MAX_RSS_GB
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", help="a ChunkHound project root (default: bench/django_corpus.py's, once built)")
    parser.add_argument("--copies", type=int, default=13, help="0: the source index itself")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--noise", type=float, default=0.002, help="amplitude of each value's perturbation")
    parser.add_argument("--package", action="append", help="a checkout whose onetool_code is measured (repeatable)")
    parser.add_argument("--reps", type=int, default=3, help="ChunkHound's SQL: calls per query")
    parser.add_argument("--rounds", type=int, default=3, help="warm rounds per package, alternating packages")
    parser.add_argument("--queries", type=int, default=20, help="how many of scale_queries.json")
    parser.add_argument("--workdir", default=str(Path.home() / ".cache" / "onetool-code" / "million"))
    parser.add_argument("--max-rss-gb", type=float, default=MAX_RSS_GB, help="a row past this is killed")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    MAX_RSS_GB = args.max_rss_gb
    if args.run == "first":
        print(json.dumps(run_first(args.root, args.base_url)))
        return 0
    if args.run == "warm":
        print(json.dumps(run_warm(args.root, args.base_url, args.reps, args.queries)))
        return 0
    if args.run == "numpy":
        print(json.dumps(run_numpy(args.cache, args.reps)))
        return 0
    import django_corpus
    import hybrid_speed

    source = Path(args.source) if args.source else django_corpus.ensure()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    root = source if args.copies == 0 else build(source, args.copies, args.seed, args.noise, workdir)
    packages = [Path(p).resolve() for p in args.package or [str(REPO)]]
    with hybrid_speed.dense_server() as server:
        results = measure(packages, root, server.base_url, workdir, args.rounds, args.queries)
        chunkhound = chunkhound_sql(root, server.base_url, workdir, args.queries, args.reps)
    name = f"{root} ({args.copies} copies of {source})" if args.copies else str(root)
    print("\n".join(report(name, results, chunkhound)))
    print(f"Load average at the end: {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
