"""Search speed with the local embedding call included: a warm search, a fresh process's first search (the
snapshot on disk), our SQL path (snapshots off), ChunkHound's own SQL and a bare numpy product over the same
matrix as the limit; single queries and 5-query batches; peak resident memory per scenario; the cold start of
``python -m onetool_code status``; and the pack file's import.

Why (issue 12): searches answer from snapshots outside the index, so that they never hold the file ChunkHound
writes, and at memory speed from a process's first call. Targets, reported and asserted nowhere: at 50,000+
chunks a warm search at least 20x faster than ChunkHound's SQL; a fresh process's first search at most 2x a
warm one plus the interpreter's start; a cold ``status`` at most 0.4 s; the pack file imported in a few ms.

What is timed: ``engine.run`` (the snapshot, the embeddings request to the test embeddings server on 127.0.0.1,
ranking, the page's rows), semantic mode (ChunkHound's order). ChunkHound's search is timed as the same
embeddings request plus its exact query (``chunkhound-index.md``) on a connection opened beforehand, as its
long-running MCP server holds one. Every scenario runs in its own subprocess, so its peak resident memory
(``VmHWM``) is its own; medians of ``--reps`` calls after one untimed call; ``first`` is one call per fresh
process, ``--reps`` processes. The snapshot is made once before (its time is reported); the operating system's
file cache is warm throughout.

Indexes, built once into ``--workdir`` and reused: the sample project (``fixtures/project``) indexed by our
indexer with vectors from the test embeddings server, a generated index of ``--chunks`` chunks x ``--dims`` dims
(clustered unit vectors, ~450 characters of code per chunk) with ChunkHound's DDL, and any ``--root`` given
(``bench/chunkhound_corpus.py`` prints the root of 85,535 chunks of real code indexed by the real ChunkHound).

Run from the repository root::

    .venv-test/bin/python bench/search_speed.py            # 50,000 x 1536, 10 repetitions (~5 min)
    .venv-test/bin/python bench/search_speed.py --quick    # 10,000 x 1536, 5 repetitions
    .venv-test/bin/python bench/search_speed.py --root "$(.venv-test/bin/python bench/chunkhound_corpus.py)"
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "fixtures" / "project"
sys.path.insert(0, str(REPO / "tests"))

PROVIDER, MODEL = "openai", "text-embedding-3-small"
SAMPLE_QUERIES = (
    "retry with exponential backoff",
    "parse configuration file",
    "user session token refresh",
    "rate limiter",
    "loan service repository",
)
SCENARIOS = ("warm", "first", "sql", "chunkhound", "numpy")
CHUNKHOUND_SQL = """SELECT c.id, c.symbol, c.code, c.chunk_type, c.start_line, c.end_line, f.path, f.language,
       array_cosine_similarity(e.embedding, ?::FLOAT[{dims}]) AS similarity
FROM embeddings_{dims} e JOIN chunks c ON e.chunk_id = c.id JOIN files f ON c.file_id = f.id
WHERE e.provider = ? AND e.model = ?
ORDER BY similarity DESC LIMIT ? OFFSET ?"""


# -- Indexes ---------------------------------------------------------------------------------------------------


def sample_index(workdir: Path) -> Path:
    """The sample project indexed by our indexer (vectors from the test server); returns the project root."""
    root = workdir / "sample" / "project"
    if (root / ".chunkhound" / "db" / "chunks.db").is_file():
        return root
    from openai_server import serve

    from onetool_code import settings
    from onetool_code.indexer import build_index

    shutil.rmtree(root.parent, ignore_errors=True)
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".chunkhound"))
    with serve() as server:
        build_index(settings.resolve(path=str(root), base_url=server.base_url), progress=False)
    return root


def generated_index(workdir: Path, chunks: int, dims: int, seed: int = 5) -> Path:
    """A generated index with ChunkHound's DDL, where ChunkHound would put it; returns the project root."""
    import duckdb

    from onetool_code import schema

    root = workdir / f"generated-{chunks}x{dims}"
    db = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    if db.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    db.parent.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    n_files = max(1, chunks // 15)
    languages = ("python", "typescript", "go", "rust", "java", "markdown")
    extensions = ("py", "ts", "go", "rs", "java", "md")
    kinds = ("function", "method", "class", "comment", "variable", "block")
    centers = rng.standard_normal((64, dims)).astype(np.float32)
    partial = db.with_suffix(".partial")
    con = duckdb.connect(str(partial))
    try:
        for statement in (*schema.SCHEMA_DDL, *schema.embedding_ddl(dims)):
            con.execute(statement)
        con.execute("INSERT INTO schema_version (version, description) VALUES (?, ?)", list(schema.SCHEMA_VERSION_ROW))
        file_ids = np.arange(1, n_files + 1, dtype=np.int32)
        kind_of_file = file_ids % len(languages)
        con.register(
            "new_files",
            {
                "id": file_ids,
                "path": np.array(
                    [f"pkg{i % 40}/sub{i % 7}/module_{i}.{extensions[i % len(extensions)]}" for i in file_ids],
                    dtype=object,
                ),
                "language": np.array([languages[k] for k in kind_of_file], dtype=object),
            },
        )
        con.execute(
            "INSERT INTO files (id, path, name, language) SELECT id, path, regexp_extract(path, '[^/]+$'), language "
            "FROM new_files"
        )
        con.unregister("new_files")
        step = 10_000
        for start in range(0, chunks, step):
            n = min(step, chunks - start)
            ids = np.arange(start + 1, start + n + 1, dtype=np.int32)
            vectors = centers[rng.integers(0, len(centers), n)] + 0.8 * rng.standard_normal((n, dims), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            column = np.empty(n, dtype=object)
            column[:] = list(vectors)
            starts = rng.integers(1, 2000, n).astype(np.int32)
            con.register(
                "new_chunks",
                {
                    "id": ids,
                    "file_id": rng.integers(1, n_files + 1, n).astype(np.int32),
                    "chunk_type": np.array([kinds[k] for k in rng.integers(0, len(kinds), n)], dtype=object),
                    "start_line": starts,
                    "vector": column,
                },
            )
            con.execute(
                "INSERT INTO chunks (id, file_id, chunk_type, symbol, code, start_line, end_line) "
                "SELECT id, file_id, chunk_type, 'symbol_' || id, "
                "repeat('def symbol_' || id || '(config, retries):  # parse and retry with backoff' || chr(10), 8), "
                "start_line, start_line + 8 FROM new_chunks"
            )
            con.execute(
                f"INSERT INTO {schema.embedding_table(dims)} (chunk_id, provider, model, embedding, dims) "
                f"SELECT id, ?, ?, vector::FLOAT[{dims}], {dims} FROM new_chunks",
                [PROVIDER, MODEL],
            )
            con.unregister("new_chunks")
    finally:
        con.close()
    partial.rename(db)
    return root


# -- One scenario, in its own process ------------------------------------------------------------------------


def peak_rss_mb(field: str = "VmHWM") -> float:
    """This process's peak (VmHWM) or current (VmRSS) resident memory; ru_maxrss would carry the parent's peak
    over the exec, so it is only the fallback where /proc is missing."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux, bytes on macOS


def run_scenario(scenario: str, root: Path, queries: int, reps: int, base_url: str) -> dict[str, Any]:
    """Time one scenario in this (fresh) process and report its median and peak memory."""
    started = time.perf_counter()
    import openai  # noqa: F401  (the embeddings client's library: most of a fresh process's imports)

    from onetool_code import request, settings
    from onetool_code.search import engine

    imported = time.perf_counter() - started
    baseline = peak_rss_mb()
    resolved = settings.resolve(path=str(root), base_url=base_url, cache=scenario != "sql")
    texts = list(SAMPLE_QUERIES[:queries])
    req = request.parse(
        queries=texts if queries > 1 else texts[0], batch=queries > 1, limit=10, offset=0, language=None,
        chunk_type=None, include=None, exclude=None, expand=None, mode="semantic", content=None, format=None,
        max_bytes=None,
    )  # fmt: skip
    extra: dict[str, Any] = {}
    if scenario == "first":  # one call: the process has mapped nothing yet
        started = time.perf_counter()
        engine.run(resolved, req)
        return {"scenario": scenario, "queries": queries, "ms": (time.perf_counter() - started) * 1000,
                "import_ms": imported * 1000, "rss_mb": peak_rss_mb(), "rss_now_mb": peak_rss_mb("VmRSS"),
                "baseline_rss_mb": baseline}  # fmt: skip
    if scenario in ("warm", "sql"):
        call: Callable[[], object] = lambda: engine.run(resolved, req)  # noqa: E731
    elif scenario == "chunkhound":
        import duckdb

        from onetool_code.index import database
        from onetool_code.search import embeddings, query_vectors

        con = duckdb.connect(str(resolved.db_path), read_only=True)
        layout = database.layout(con, resolved.db_path)
        dims = query_vectors.embedding_set(layout, resolved).dims
        sql = CHUNKHOUND_SQL.format(dims=dims)

        def call() -> object:
            vectors = embeddings.embed(texts, resolved)
            return [con.execute(sql, [v.tolist(), PROVIDER, MODEL, 10, 0]).fetchall() for v in vectors]

    elif scenario == "numpy":
        from onetool_code.index import live

        held = live.view(root, resolved.db_path).snapshot
        matrix = np.ascontiguousarray(next(iter(held.vectors.values())).matrix.T)  # (dims, rows), in memory
        units = np.stack([np.resize(np.float32(i + 1), matrix.shape[0]) for i in range(queries)])
        units /= np.linalg.norm(units, axis=1, keepdims=True)
        extra["matrix_mb"] = matrix.nbytes / 2**20
        extra["vectors"] = matrix.shape[1]
        call = (lambda: units[0] @ matrix) if queries == 1 else (lambda: units @ matrix)  # (dims, rows)
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    call()
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return {
        "scenario": scenario,
        "queries": queries,
        "ms": statistics.median(samples),
        "samples": samples,
        "rss_mb": peak_rss_mb(),
        "rss_now_mb": peak_rss_mb("VmRSS"),
        "baseline_rss_mb": baseline,
        **extra,
    }


def in_subprocess(
    scenario: str, root: Path, queries: int, reps: int, base_url: str, blas_threads: int | None
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--run", scenario, "--root", str(root), "--queries", str(queries)]
    env = dict(os.environ)
    if blas_threads:  # read by OpenBLAS when numpy is imported, so it must be set before the process starts
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    if scenario != "first":
        return _run([*command, "--reps", str(reps), "--base-url", base_url], env)
    runs = [_run([*command, "--reps", "1", "--base-url", base_url], env) for _ in range(reps)]
    middle = sorted(runs, key=lambda r: r["ms"])[len(runs) // 2]
    return {**middle, "samples": [r["ms"] for r in runs]}


def _run(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wall(command: list[str], runs: int = 5) -> float:
    """Median wall time of a command, in seconds (a fresh interpreter each time)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=REPO)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def make_snapshot(root: Path, base_url: str) -> str:
    """The snapshot of the index, made now in a fresh process if the cache directory has none: how long it took."""
    code = (
        "import sys, time; started = time.perf_counter()\n"
        "from onetool_code import settings\nfrom onetool_code.index import live\n"
        "s = settings.resolve(path=sys.argv[1], base_url=sys.argv[2])\n"
        "held = live.view(s.project_root, s.db_path).snapshot\n"
        "print(f'{time.perf_counter() - started:.1f} s in a fresh process (the index held {held.read_seconds:.1f} s)')"
    )
    done = subprocess.run([sys.executable, "-c", code, str(root), base_url], capture_output=True, text=True, check=True)
    return done.stdout.strip()


# -- The report -------------------------------------------------------------------------------------------------


def table(name: str, results: dict[tuple[str, int], dict[str, Any]], made: str) -> list[str]:
    def ms(scenario: str, queries: int) -> float:
        return results[(scenario, queries)]["ms"]

    numpy_row = results[("numpy", 1)]
    lines = [
        f"**{name}** ({numpy_row.get('vectors', 0):,} vectors, float32 matrix {numpy_row.get('matrix_mb', 0):.1f} MB; "
        f"snapshot made in {made})",
        "",
        "| semantic search, embedding call included | ours, warm | ours, first in a fresh process | ours, SQL "
        "(snapshots off) | ChunkHound's SQL | bare numpy product | ChunkHound / warm | first / warm |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for queries, label in ((1, "1 query"), (5, "5-query batch")):
        row = [f"{ms(s, queries):,.2f} ms" if ms(s, queries) < 10 else f"{ms(s, queries):,.1f} ms" for s in SCENARIOS]
        warm = ms("warm", queries)
        row += [f"{ms('chunkhound', queries) / warm:,.1f}x", f"{ms('first', queries) / warm:,.1f}x"]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    lines += [
        "",
        f"Importing the library and openai before that first search: {results[('first', 1)]['import_ms']:,.0f} ms.",
        "",
        f"| resident memory, MB (1 query; ~{results[('warm', 1)]['baseline_rss_mb']:.0f} MB is the interpreter "
        "and libraries) | " + " | ".join(SCENARIOS) + " |",
        "|---|" + "---:|" * len(SCENARIOS),
        "| peak | " + " | ".join(f"{results[(s, 1)]['rss_mb']:,.0f}" for s in SCENARIOS) + " |",
        "| after the timed calls | " + " | ".join(f"{results[(s, 1)]['rss_now_mb']:,.0f}" for s in SCENARIOS) + " |",
        "",
    ]
    return lines


def pack_import_ms(runs: int = 5) -> float:
    """Median time to import the pack file by path in a fresh interpreter, as OneTool does at start-up."""
    code = (
        "import importlib.util, time; from pathlib import Path\n"
        "started = time.perf_counter()\n"
        f"spec = importlib.util.spec_from_file_location('code_pack', {str(REPO / 'onetool_code' / 'pack.py')!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print((time.perf_counter() - started) * 1000)"
    )
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]  # fmt: skip
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks and 5 repetitions")
    parser.add_argument("--chunks", type=int, help="chunks in the generated index (default 50,000)")
    parser.add_argument("--dims", type=int, default=1536)
    parser.add_argument("--reps", type=int, help="timed calls per scenario (default 10)")
    parser.add_argument("--workdir", default="/tmp/onetool-code-bench", help="where the indexes are kept")
    parser.add_argument("--root", help="measure this project's index only (e.g. bench/chunkhound_corpus.py's)")
    parser.add_argument(
        "--blas-threads",
        type=int,
        help="OPENBLAS_NUM_THREADS for the scenarios; 1 keeps a shared, busy machine from quantising BLAS calls "
        "to scheduler ticks (default: OpenBLAS's own choice)",
    )
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    reps = args.reps or (5 if args.quick else 10)
    if args.run:
        print(json.dumps(run_scenario(args.run, Path(args.root), args.queries, reps, args.base_url)))
        return
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ["ONETOOL_CODE_CACHE_DIR"] = str(workdir / "cache")  # the snapshots, for every scenario
    if args.root:
        indexes = [(f"{args.root}", Path(args.root))]
    else:
        chunks = args.chunks or (10_000 if args.quick else 50_000)
        started = time.perf_counter()
        indexes = [("sample project", sample_index(workdir))]
        indexes.append((f"generated, {chunks:,} x {args.dims}", generated_index(workdir, chunks, args.dims)))
        print(f"indexes ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    from openai_server import serve

    out = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start; Python {platform.python_version()}, "
        f"numpy {np.__version__}, duckdb {__import__('duckdb').__version__}, OpenBLAS threads: "
        f"{args.blas_threads or 'default'}. Median of {reps} calls.",
        "",
    ]
    with serve() as server:
        for name, root in indexes:
            made = make_snapshot(root, server.base_url)
            results = {}
            for scenario in SCENARIOS:
                for queries in (1, 5):
                    print(f"{name}: {scenario}, {queries} quer{'y' if queries == 1 else 'ies'}", file=sys.stderr)
                    results[(scenario, queries)] = in_subprocess(
                        scenario, root, queries, reps, server.base_url, args.blas_threads
                    )
            out += table(name, results, made)
        root = indexes[-1][1]
        interpreter = wall([sys.executable, "-c", "pass"])
        command = wall([sys.executable, "-m", "onetool_code", "search", SAMPLE_QUERIES[0], "--path", str(root),
                        "--mode", "semantic", "--base-url", server.base_url])  # fmt: skip
    status = wall([sys.executable, "-m", "onetool_code", "status", "--path", str(root)])
    out += [
        f"The whole command `python -m onetool_code search ... --mode semantic` on the last index: {command * 1000:,.0f}"
        f" ms (the interpreter alone starts in {interpreter * 1000:,.0f} ms).",
        f"Cold start of `python -m onetool_code status` on it: {status * 1000:,.0f} ms. Pack file import: "
        f"{pack_import_ms():.1f} ms. (Medians of 5.)",
        f"Load average at the end: {os.getloadavg()[0]:.1f}.",
    ]
    print("\n".join(out))


if __name__ == "__main__":
    main()
