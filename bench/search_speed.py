"""Search speed of the engine (embedding excluded): warm and cold vector cache, our SQL path, ChunkHound's own
SQL, and a bare numpy product over the same matrix as the limit; single queries and 5-query batches; peak
resident memory per scenario; and the cold start of ``python -m onetool_code status``.

Why: ChunkHound's exact semantic SQL is the correct ranking but a slow way to compute it (issue 6), and
OneTool keeps our process alive, so an agent's later searches can run at memory speed. This reports the
numbers, it asserts nothing (targets: warm search within 2x the bare numpy product and at least 25x faster than
ChunkHound's SQL at 50,000+ chunks; a 5-query batch within 1.5x one query).

What is timed: ``engine.run`` (both short read-only connections, ranking, fetching the page's rows) with the
embeddings request replaced by a lookup of precomputed query vectors, so the network is left out and the
engine below it is measured. ChunkHound's SQL is its exact query (``chunkhound-index.md``) on a connection
opened beforehand, as its long-running MCP server holds one. Every scenario runs in its own subprocess, so its
peak resident memory (``VmHWM``) is its own; medians of ``--reps`` calls after one untimed call (except
``cold``, where every timed call starts from an empty cache, so it includes reading and normalising the
vectors; the operating system's file cache is warm throughout).

Indexes, built once into ``--workdir`` and reused: the sample project (``fixtures/project``) indexed by our
indexer with vectors from the test embeddings server, and a generated index of ``--chunks`` chunks x
``--dims`` dims (clustered unit vectors, ~450 characters of code per chunk) with ChunkHound's DDL.

Run from the repository root::

    /tmp/dev/bin/python bench/search_speed.py            # 50,000 x 1536, 10 repetitions (~3 min)
    /tmp/dev/bin/python bench/search_speed.py --quick    # 10,000 x 1536, 5 repetitions
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
SCENARIOS = ("warm", "cold", "sql", "chunkhound", "numpy")
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


def query_vectors(root: Path, dims: int, count: int) -> tuple[list[str], np.ndarray]:
    """Texts and vectors of the queries: the sample's through the test server's function, else near clusters."""
    if root.name == "project":
        from openai_server import vector_for

        texts = list(SAMPLE_QUERIES[:count])
        return texts, np.stack([vector_for(t, dims) for t in texts])
    rng = np.random.default_rng(99)
    vectors = rng.standard_normal((count, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [f"query {i}" for i in range(count)], vectors


def peak_rss_mb(field: str = "VmHWM") -> float:
    """This process's peak (VmHWM) or current (VmRSS) resident memory; ru_maxrss would carry the parent's peak
    over the exec, so it is only the fallback where /proc is missing."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux, bytes on macOS


def run_scenario(scenario: str, root: Path, queries: int, reps: int) -> dict[str, Any]:
    """Time one scenario in this (fresh) process and report its median and peak memory."""
    import duckdb

    from onetool_code import cache, embeddings, engine, index, request, settings

    baseline = peak_rss_mb()
    db = settings.resolve(path=str(root)).db_path
    with index.connect(root, db) as con:
        chosen = next(s for s in index.layout(con, db).embedding_sets if (s.provider, s.model) == (PROVIDER, MODEL))
    texts, vectors = query_vectors(root, chosen.dims, queries)
    by_text = dict(zip(texts, vectors, strict=True))

    def precomputed(batch: Any, _settings: Any, **_options: Any) -> np.ndarray:
        return np.stack([by_text[t] for t in batch])

    embeddings.embed = precomputed  # the engine's only network call, replaced by a lookup
    cache.BUILD_AFTER = 1  # warm and cold measure the cache itself; the policy is reported separately
    req = request.parse(
        queries=texts if queries > 1 else texts[0], batch=queries > 1, limit=10, offset=0, language=None,
        chunk_type=None, include=None, exclude=None, expand=None, mode="semantic", content=None, format=None,
        max_bytes=None, default_limit=10, default_max_bytes=5000,
    )  # fmt: skip
    extra: dict[str, Any] = {}
    if scenario in ("warm", "sql"):
        resolved = settings.resolve(path=str(root), cache=scenario == "warm")
        call: Callable[[], object] = lambda: engine.run(resolved, req)  # noqa: E731
        call()
    elif scenario == "cold":
        resolved = settings.resolve(path=str(root), cache=True)

        def call() -> object:
            cache.clear()
            return engine.run(resolved, req)

    elif scenario == "chunkhound":
        con = duckdb.connect(str(db), read_only=True)
        sql = CHUNKHOUND_SQL.format(dims=chosen.dims)

        def call() -> object:
            return [con.execute(sql, [v.tolist(), PROVIDER, MODEL, 10, 0]).fetchall() for v in vectors]

        call()
    elif scenario == "numpy":
        with index.connect(root, db) as con:
            matrix = cache.build(con, db, chosen).matrix
        units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        extra["matrix_mb"] = matrix.nbytes / 2**20
        call = (lambda: units[0] @ matrix) if queries == 1 else (lambda: units @ matrix)  # (dims, rows)
        call()
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    samples = []
    for _ in range(reps):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    if scenario in ("warm", "cold"):
        info = cache.info(db)
        if info is not None:
            extra.update(cache_mb=info.nbytes / 2**20, matrix_mb=info.matrix_bytes / 2**20, vectors=info.vectors)
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


def in_subprocess(scenario: str, root: Path, queries: int, reps: int, blas_threads: int | None) -> dict[str, Any]:
    command = [sys.executable, __file__, "--run", scenario, "--root", str(root), "--queries", str(queries)]
    env = dict(os.environ)
    if blas_threads:  # read by OpenBLAS when numpy is imported, so it must be set before the process starts
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    done = subprocess.run([*command, "--reps", str(reps)], capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{scenario} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def status_cold_start(root: Path, runs: int = 5) -> float:
    """Median wall time of ``python -m onetool_code status --path ROOT`` (a fresh interpreter each time)."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "onetool_code", "status", "--path", str(root)],
            check=True,
            capture_output=True,
            cwd=REPO,
        )
        times.append(time.perf_counter() - started)
    return statistics.median(times)


# -- The report -------------------------------------------------------------------------------------------------


def table(name: str, results: dict[tuple[str, int], dict[str, Any]]) -> list[str]:
    def ms(scenario: str, queries: int) -> float:
        return results[(scenario, queries)]["ms"]

    lines = [
        f"**{name}** ({results[('warm', 1)].get('vectors', '?'):,} vectors, float32 matrix "
        f"{results[('warm', 1)].get('matrix_mb', 0):.1f} MB, warm cache {results[('warm', 1)].get('cache_mb', 0):.1f} MB)",
        "",
        "| search | ours, cache warm | ours, cache cold (incl. build) | ours, SQL (no cache) | ChunkHound's SQL | bare numpy product | warm / numpy | ChunkHound / warm |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for queries, label in ((1, "1 query"), (5, "5-query batch")):
        row = [f"{ms(s, queries):,.2f} ms" if ms(s, queries) < 10 else f"{ms(s, queries):,.1f} ms" for s in SCENARIOS]
        warm = ms("warm", queries)
        row += [f"{warm / ms('numpy', queries):.1f}x", f"{ms('chunkhound', queries) / warm:,.1f}x"]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    lines += [
        "",
        f"5-query batch / 1 query (warm): {ms('warm', 5) / ms('warm', 1):.1f}x; bare numpy: "
        f"{ms('numpy', 5) / ms('numpy', 1):.1f}x. Building the cache costs "
        f"{(ms('cold', 1) - ms('warm', 1)) / ms('sql', 1):.1f} of our SQL searches.",
        "",
        f"| resident memory, MB (1 query; ~{results[('warm', 1)]['baseline_rss_mb']:.0f} MB is the interpreter "
        "and libraries) | " + " | ".join(SCENARIOS) + " |",
        "|---|" + "---:|" * len(SCENARIOS),
        "| peak | " + " | ".join(f"{results[(s, 1)]['rss_mb']:,.0f}" for s in SCENARIOS) + " |",
        "| after the timed calls | " + " | ".join(f"{results[(s, 1)]['rss_now_mb']:,.0f}" for s in SCENARIOS) + " |",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks and 5 repetitions")
    parser.add_argument("--chunks", type=int, help="chunks in the generated index (default 50,000)")
    parser.add_argument("--dims", type=int, default=1536)
    parser.add_argument("--reps", type=int, help="timed calls per scenario (default 10)")
    parser.add_argument("--workdir", default="/tmp/onetool-code-bench", help="where the indexes are kept")
    parser.add_argument(
        "--blas-threads",
        type=int,
        help="OPENBLAS_NUM_THREADS for the scenarios; 1 keeps a shared, busy machine from quantising BLAS calls "
        "to scheduler ticks (default: OpenBLAS's own choice)",
    )
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--queries", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    reps = args.reps or (5 if args.quick else 10)
    if args.run:
        print(json.dumps(run_scenario(args.run, Path(args.root), args.queries, reps)))
        return
    chunks = args.chunks or (10_000 if args.quick else 50_000)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    indexes = [("sample project", sample_index(workdir)), (f"generated, {chunks:,} x {args.dims}", None)]
    built = time.perf_counter()
    generated = generated_index(workdir, chunks, args.dims)
    indexes[1] = (indexes[1][0], generated)
    print(
        f"indexes ready in {time.perf_counter() - started:.1f} s (generated one: {time.perf_counter() - built:.1f} s)",
        file=sys.stderr,
    )
    out = [
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at start; Python {platform.python_version()}, "
        f"numpy {np.__version__}, duckdb {__import__('duckdb').__version__}, OpenBLAS threads: "
        f"{args.blas_threads or 'default'}. Median of {reps} calls.",
        "",
    ]
    for name, root in indexes:
        assert root is not None
        results = {}
        for scenario in SCENARIOS:
            for queries in (1, 5):
                print(f"{name}: {scenario}, {queries} quer{'y' if queries == 1 else 'ies'}", file=sys.stderr)
                results[(scenario, queries)] = in_subprocess(scenario, root, queries, reps, args.blas_threads)
        out += table(name, results)
    cold = status_cold_start(indexes[0][1])  # type: ignore[arg-type]
    out.append(f"Cold start of `python -m onetool_code status --path <sample>`: {cold * 1000:,.0f} ms (median of 5).")
    out.append(f"Load average at the end: {os.getloadavg()[0]:.1f}.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
