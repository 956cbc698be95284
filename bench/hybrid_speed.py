"""Speed of the hybrid default (issue 9) on 85,535 chunks of real code: warm semantic, lexical and hybrid
searches, a fresh process's first search with and without a snapshot on disk, and the snapshot's making time,
size on disk, load time and memory.

Why: hybrid adds BM25 and the priors to every search. The issue's targets, at 50k+ chunks (asserted nowhere,
reported here): warm lexical within 1.5x warm semantic, warm hybrid within 2x, and a process's first search
(fresh interpreter, the snapshot on disk) within 3 s. ``search_speed.py``'s
generated index repeats the same few words in every chunk, the worst case for BM25 and nothing like code, so
this benchmark indexes real code instead.

**Corpus** (pinned, fetched once from the package registries with their own clients, SHA-256 checked, cached
in ``~/.cache/onetool-code/hybrid-speed/``): the wheels of Django 5.1.4 and SymPy 1.13.3 (Python, tests
included) and the npm tarballs of three 0.170.0 (``src/``, JavaScript) and rxjs 7.8.1 (``src/``, TypeScript;
their bundles are copies of ``src/``), side by side in one project, indexed by our own indexer
(``python -m onetool_code index``) with 1536-dim vectors from the test embeddings server
(``tests/openai_server.py``, on 127.0.0.1) made dense by a fixed rotation (``dense_vector_for``): the server's
own vectors are nearly all zeros and DuckDB would store them in a seventh of the space real ones take.

**Timed**: ``engine.run`` (connections, ranking, fetching the hits' rows; what ``search_speed.py`` times) and
``api.run_search`` (that plus merging and formatting the text answer: what an agent waits for), with the
embeddings request replaced by a lookup of the query's vector, computed beforehand; median over 10
queries (words, identifiers, both) of each query's median over ``--reps`` calls. The warm modes share one
process and alternate query by query: the machine is shared, and other work then weighs on each mode alike
(CPU time is reported beside wall time for the same reason). Everything else runs in a fresh process of its
own (``OPENBLAS_NUM_THREADS`` from ``--blas-threads``). The first search is timed two ways: in a fresh process
with precomputed vectors, phase by phase (each phase a wrapper timing one engine function); and as the whole
command an agent's shell would run, ``python -m onetool_code search QUERY --base-url <test server>``.

Run from the repository root::

    .venv-test/bin/python bench/hybrid_speed.py --blas-threads 1     # ~6 min the first time (fetch, index)
    .venv-test/bin/python bench/hybrid_speed.py --setup-only         # fetch and index only
    .venv-test/bin/python bench/hybrid_speed.py --profile hybrid     # cProfile of warm hybrid searches
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import hashlib
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

CORPUS_VERSION = 2  # bump when the packages or the recipe change, so an old index is never trusted
DIMS = 1536  # text-embedding-3-small, the default model: the test server hashes into that many dimensions
QUERIES = (
    "parse a date string into a datetime",
    "get_object_or_404",
    "csrf token check in middleware",
    "simplify trigonometric expression",
    "Matrix.det determinant",
    "solve polynomial equation for its roots",
    "WebGLRenderer setPixelRatio",
    "compute bounding sphere of buffer geometry",
    "mergeMap concurrent inner subscriptions",
    "QuerySet select_related prefetch",
)
MODES = ("semantic", "lexical", "hybrid")


@dataclass(frozen=True)
class Package:
    """One pinned project of the corpus: how to fetch it, its archive's SHA-256, what of it is kept."""

    name: str  # folder under the project root
    registry: str  # "pypi" (a wheel) or "npm" (a tarball)
    spec: str
    archive: str  # the file the registry client writes
    sha256: str
    keep: tuple[str, ...] = ()  # top-level entries kept (empty: all but *.dist-info)


PACKAGES = (
    Package(
        "django", "pypi", "django==5.1.4", "Django-5.1.4-py3-none-any.whl",
        "236e023f021f5ce7dee5779de7b286565fdea5f4ab86bae5338e3f7b69896cf0",
    ),
    Package(
        "sympy", "pypi", "sympy==1.13.3", "sympy-1.13.3-py3-none-any.whl",
        "54612cf55a62755ee71824ce692986f23c88ffa77207b30c1368eda4a7060f73",
    ),
    Package(
        "three", "npm", "three@0.170.0", "three-0.170.0.tgz",
        "4a608a355dcaba72e0e5383cdc814303f5b6060b43c238cdf6932dceb699238d", keep=("src", "package.json", "README.md"),
    ),
    Package(
        "rxjs", "npm", "rxjs@7.8.1", "rxjs-7.8.1.tgz",
        "c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149", keep=("src", "package.json", "README.md"),
    ),
)  # fmt: skip


def _log(message: str) -> None:
    print(f"[hybrid-speed] {message}", file=sys.stderr, flush=True)


# -- Dense vectors ----------------------------------------------------------------------------------------------


@functools.cache
def _rotation() -> Any:
    """A fixed random orthogonal matrix (QR of seeded Gaussians): it turns the test server's sparse vectors
    into dense ones with the same cosines."""
    import numpy as np

    q, r = np.linalg.qr(np.random.default_rng(9).standard_normal((DIMS, DIMS)))
    return q * np.sign(np.diag(r))


def dense_vector_for(text: str, dims: int = DIMS) -> Any:
    """The test server's vector of ``text``, rotated: as dense as a real model's.

    The server's feature-hashed vectors have a handful of non-zero values out of 1536, which DuckDB compresses
    to a seventh of their size (ALP and constant segments), so scanning them would be far cheaper than scanning
    a real model's vectors, which do not compress. A rotation keeps every cosine, so the rankings stay those of
    the server's vectors; only the storage becomes realistic (~6 KB a vector).
    """
    assert dims == DIMS, f"the corpus is indexed with {DIMS} dimensions"
    return (_rotation() @ _sparse_vector_for()(text, dims).astype("float64")).astype("float32")


@functools.cache
def _sparse_vector_for() -> Callable[[str, int], Any]:
    """The server's own function, kept before ``dense_server`` puts ``dense_vector_for`` in its place."""
    import openai_server

    return openai_server.vector_for


@contextlib.contextmanager
def dense_server() -> Iterator[Any]:
    """The test embeddings server (in this process), answering with ``dense_vector_for``."""
    import openai_server

    sparse = _sparse_vector_for()
    openai_server.vector_for = dense_vector_for  # the handler looks the function up at each request
    try:
        with openai_server.serve() as server:
            yield server
    finally:
        openai_server.vector_for = sparse


# -- The corpus and its index ----------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``$ONETOOL_CODE_HYBRID_SPEED_DIR``, else ``~/.cache/onetool-code/hybrid-speed``."""
    named = os.environ.get("ONETOOL_CODE_HYBRID_SPEED_DIR")
    return Path(named).expanduser() if named else Path.home() / ".cache" / "onetool-code" / "hybrid-speed"


def corpus_root(cache: Path) -> Path:
    return cache / f"corpus-{CORPUS_VERSION}"


def marker_path(cache: Path) -> Path:
    """Beside the root, not in it (the indexer would index it); written last: the index is complete."""
    return cache / f"corpus-{CORPUS_VERSION}.complete.json"


def query_vectors_path(cache: Path) -> Path:
    """The queries' vectors, written by the parent before any scenario runs (JSON: no numpy to import first)."""
    return cache / "query-vectors.json"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(cache: Path, package: Package) -> Path:
    """The pinned archive in ``downloads/``, through pip or npm, its hash checked."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / package.archive
    if not archive.exists():
        if package.registry == "pypi":
            args = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", "."]
        else:
            args = ["npm", "pack", "--silent"]
        _log(f"fetching {package.spec}")
        subprocess.run([*args, package.spec], cwd=downloads, check=True, capture_output=True, stdin=subprocess.DEVNULL)
    digest = _sha256(archive)
    if digest != package.sha256:
        raise SystemExit(f"{archive}: SHA-256 {digest}, pinned {package.sha256}; delete it to fetch it again")
    return archive


def unpack(archive: Path, package: Package, root: Path) -> None:
    """Into ``root/<name>``: a wheel's files but its metadata; a tarball's ``keep`` entries, its top folder dropped."""
    target = root / package.name
    target.mkdir(parents=True)
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(target, [n for n in wheel.namelist() if not n.split("/", 1)[0].endswith(".dist-info")])
        return
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) >= 2 and parts[1] in package.keep:
                member.name = str(Path(*parts[1:]))
                members.append(member)
        tar.extractall(target, members=members, filter="data")


def ensure_corpus(cache: Path) -> dict[str, Any]:
    """The indexed corpus, built if missing; returns its marker (chunks, vectors, how long indexing took)."""
    with contextlib.suppress(OSError, ValueError):
        marker = json.loads(marker_path(cache).read_text())
        if marker.get("corpus_version") == CORPUS_VERSION and (Path(marker["root"]) / ".chunkhound").is_dir():
            return marker
    root = corpus_root(cache)
    for stale in cache.glob("corpus-*"):  # earlier recipes' indexes and markers, and an incomplete index
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink()
    root.mkdir(parents=True)
    for package in PACKAGES:
        unpack(fetch(cache, package), package, root)
    with dense_server() as server:
        _log(f"indexing {root} with vectors from {server.base_url} (4-11 min on 2 cores)")
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "onetool_code", "index", str(root), "--base-url", server.base_url],
            capture_output=True, text=True, check=False, cwd=REPO, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"indexing failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    import duckdb

    con = duckdb.connect(str(root / ".chunkhound" / "db" / "chunks.db"), read_only=True)
    try:
        chunks = dict(
            con.execute(
                "SELECT split_part(f.path, '/', 1), count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
                "GROUP BY 1 ORDER BY 1"
            ).fetchall()
        )
        languages = dict(con.execute("SELECT language, count(*) FROM chunks GROUP BY 1 ORDER BY 2 DESC").fetchall())
        files = con.execute("SELECT count(*) FROM files").fetchone()[0]  # type: ignore[index]
        vectors = con.execute(f"SELECT count(*) FROM embeddings_{DIMS}").fetchone()[0]  # type: ignore[index]
    finally:
        con.close()
    marker = {
        "corpus_version": CORPUS_VERSION,
        "root": str(root),
        "packages": [p.spec for p in PACKAGES],
        "files": files,
        "chunks": chunks,
        "chunks_total": sum(chunks.values()),
        "languages": languages,
        "vectors": vectors,
        "dims": DIMS,
        "index_seconds": round(seconds, 1),
        "indexer": done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "",
    }
    temporary = marker_path(cache).with_suffix(".tmp")
    temporary.write_text(json.dumps(marker, indent=2) + "\n")
    temporary.replace(marker_path(cache))
    return marker


# -- Inside one scenario's process -------------------------------------------------------------------------------


class Phases:
    """Inclusive wall time per wrapped function, per mode (nested functions count in their callers too)."""

    def __init__(self) -> None:
        self.labels: list[str] = []  # in the order of ``install``: callers before what they call
        self.seconds: dict[tuple[str, str], float] = {}
        self.mode = "hybrid"
        self.active = True

    def add(self, label: str, seconds: float) -> None:
        if self.active:
            key = (self.mode, label)
            self.seconds[key] = self.seconds.get(key, 0.0) + seconds

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        self.labels.append(label)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(label, time.perf_counter() - started)

        setattr(owner, name, timed)

    def wrap_connect(self, index: Any) -> None:
        """``index.connect`` is a context manager: time the open and the close, not the block."""
        original = index.connect
        self.labels += ["index.connect: open", "index.connect: close"]

        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            started = time.perf_counter()
            with original(*args, **kwargs) as con:
                self.add("index.connect: open", time.perf_counter() - started)
                yield con
                started = time.perf_counter()
            self.add("index.connect: close", time.perf_counter() - started)

        index.connect = timed

    def per_call(self, mode: str, calls: int) -> dict[str, float]:
        """Milliseconds per search of one mode, by phase, in the order of ``labels``."""
        return {
            label: self.seconds[(mode, label)] * 1000 / calls for label in self.labels if (mode, label) in self.seconds
        }


def install(phases: Phases, vectors: dict[str, list[float]]) -> None:
    """Replace the embeddings request by a lookup of the queries' vectors (``dense_vector_for``, computed by the
    parent: nothing of that is timed here), and time the engine's phases."""
    from onetool_code import api
    from onetool_code.answer import formatting
    from onetool_code.index import database, lexical, live, rows
    from onetool_code.index import readers as retrievers
    from onetool_code.index import vector_cache as cache
    from onetool_code.search import embeddings, engine, query_vectors, ranking

    def precomputed(batch: Any, _settings: Any, **_options: Any) -> Any:
        import numpy as np

        return np.asarray([vectors[text] for text in batch], dtype=np.float32)

    embeddings.embed = precomputed  # the engine's only network call, replaced by the same vectors the server gives
    phases.wrap(api, "run_search", "api.run_search")
    phases.wrap(formatting, "render_search", "  formatting.render_search")
    phases.wrap(engine, "run", "engine.run")
    phases.wrap_connect(database)
    phases.wrap(live, "view", "live.view (held, mapped, or made now)")
    phases.wrap(live, "_load", "  live._load (memory-map a published snapshot)")
    phases.wrap(live, "_read", "  live._read (read the index, derive, publish)")
    phases.wrap(lexical, "build", "    lexical.build")
    phases.wrap(query_vectors, "embedded", "query_vectors.embedded (embed)")
    phases.wrap(retrievers.FromSnapshot, "semantic", "FromSnapshot.semantic")
    phases.wrap(cache.VectorCache, "rank", "  VectorCache.rank (matrix product, partial sort)")
    phases.wrap(retrievers.FromSnapshot, "lexical", "FromSnapshot.lexical")
    phases.wrap(lexical, "load", "  lexical.load (memory-map bm25s' arrays, parse its vocabulary)")
    phases.wrap(lexical.LexicalIndex, "rank", "  LexicalIndex.rank (BM25)")
    phases.wrap(rows.ChunkRows, "hits", "ChunkRows.hits (the hits' rows; in both rankings)")
    phases.wrap(database, "semantic", "index.semantic (ChunkHound's SQL; snapshots off)")
    phases.wrap(ranking, "hybrid", "ranking.hybrid (fusion, priors)")


def rss_mb(field: str = "VmHWM") -> float:
    """This process's peak (VmHWM) or current (VmRSS) resident memory, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def warm(root: Path, reps: int, phases: Phases) -> dict[str, Any]:
    """Every mode's warm searches in one process, interleaved query by query, so that the other work on a
    shared machine weighs on each mode alike. Wall and CPU time (all the process's threads) per call."""
    from onetool_code import api, request, settings
    from onetool_code.search import engine

    resolved = settings.resolve(path=str(root), cache=True)
    requests = {
        (query, mode): request.parse(
            queries=query, batch=False, limit=10, offset=0, language=None, chunk_type=None, include=None,
            exclude=None, expand=None, mode=mode, content=None, format=None, max_bytes=None,
        )
        for query in QUERIES
        for mode in MODES
    }  # fmt: skip
    memory = {"start": rss_mb("VmRSS")}
    phases.active = False
    for mode in MODES:  # untimed: semantic maps the snapshot, lexical loads its lexical index
        for query in QUERIES:
            api.run_search(query=query, path=str(root), mode=mode)
        memory[mode] = rss_mb("VmRSS")
    calls: dict[str, Callable[[str, str], object]] = {
        "engine": lambda query, mode: engine.run(resolved, requests[(query, mode)]),
        "api": lambda query, mode: api.run_search(query=query, path=str(root), mode=mode),
    }
    samples: dict[tuple[str, str, str, str], list[float]] = {}
    for _ in range(reps):
        for query in QUERIES:
            for mode in MODES:
                for label, call in calls.items():
                    phases.mode, phases.active = mode, label == "engine"
                    wall, cpu = time.perf_counter(), time.process_time()
                    call(query, mode)
                    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                    samples.setdefault((mode, label, "wall", query), []).append(wall * 1000)
                    samples.setdefault((mode, label, "cpu", query), []).append(cpu * 1000)
    phases.active = False
    out: dict[str, Any] = {}
    for mode in MODES:
        result: dict[str, Any] = {"phases_ms": phases.per_call(mode, reps * len(QUERIES))}
        for label in calls:
            for clock in ("wall", "cpu"):
                per_query = [statistics.median(samples[(mode, label, clock, q)]) for q in QUERIES]
                result[f"{label}_{clock}_ms"] = statistics.median(per_query)
                result[f"{label}_{clock}_max_ms"] = max(per_query)
                if (label, clock) == ("engine", "wall"):
                    result["per_query"] = dict(zip(QUERIES, per_query, strict=True))
        out[mode] = result
    from onetool_code.index import live

    held = live.view(root, resolved.db_path).snapshot
    out["memory"] = {**memory, "peak": rss_mb(), "heap_nbytes": held.nbytes / 2**20}
    return out


def first(root: Path, query: str, phases: Phases, vectors: dict[str, list[float]]) -> dict[str, Any]:
    """A fresh process's first hybrid search, phase by phase (this process has imported nothing of ours yet)."""
    started = time.perf_counter()
    install(phases, vectors)
    imported = time.perf_counter()
    from onetool_code import api

    cpu = time.process_time()
    api.run_search(query=query, path=str(root))
    cpu = time.process_time() - cpu
    done = time.perf_counter()
    return {
        "import_ms": (imported - started) * 1000,
        "search_ms": (done - imported) * 1000,
        "search_cpu_ms": cpu * 1000,
        "phases_ms": phases.per_call("hybrid", 1),
        "rss_peak_mb": rss_mb(),
    }


def snapshot_build(root: Path) -> dict[str, Any]:
    """Make the snapshot in the (empty) cache directory, as the first search after a change of the index does."""
    import bm25s

    from onetool_code import settings
    from onetool_code.index import database, lexical, live

    db = settings.resolve(path=str(root)).db_path
    phases = Phases()
    phases.wrap(database, "chunk_rows", "read")
    phases.wrap(lexical, "build", "lexical")
    phases.wrap(bm25s.BM25, "index", "bm25s")
    phases.wrap(live, "publish", "publish")
    before = rss_mb("VmRSS")
    started = time.perf_counter()
    made = live.view(root, db).snapshot
    build_s = time.perf_counter() - started
    files = {p.relative_to(made.folder).as_posix(): p.stat().st_size for p in made.folder.rglob("*") if p.is_file()}
    lexical_mb = sum(size for name, size in files.items() if name.startswith("lexical/")) / 2**20
    words = made.lexical_index
    assert words.retriever is not None
    seconds = {name: phases.seconds[("hybrid", name)] for name in ("read", "lexical", "bm25s", "publish")}
    return {
        "build_s": build_s,
        "held_s": made.read_seconds,
        "read_s": seconds["read"],
        "lexical_s": seconds["lexical"],
        "bm25s_s": seconds["bm25s"],
        "save_s": seconds["publish"],
        "disk_mb": sum(files.values()) / 2**20,
        "lexical_disk_mb": lexical_mb,
        "vocabulary": len(words.retriever.vocab_dict),
        "postings": int(words.retriever.scores["data"].size),
        "documents": int(words.chunk_ids.size),
        "rss_growth_mb": rss_mb("VmRSS") - before,
        "rss_peak_mb": rss_mb(),
    }


def snapshot_load(root: Path) -> dict[str, Any]:
    """Map the published snapshot in a fresh process, load its lexical index, then rank every query: the first
    ranking pays the page faults of the mapped arrays."""
    from onetool_code import names, schema, settings
    from onetool_code.index import live

    db = settings.resolve(path=str(root)).db_path
    before = rss_mb("VmRSS")
    started = time.perf_counter()
    held = live.view(root, db).snapshot
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    loaded = held.lexical_index
    lexical_s = time.perf_counter() - started
    after_load = rss_mb("VmRSS")
    ranks = []
    for query in QUERIES:
        started = time.perf_counter()
        loaded.rank([names.query_tokens(query)], schema.Filters(), 100)
        ranks.append((time.perf_counter() - started) * 1000)
    return {
        "load_ms": load_s * 1000,
        "lexical_load_ms": lexical_s * 1000,
        "first_rank_ms": ranks[0],
        "later_rank_ms": statistics.median(ranks[1:]),
        "rss_load_mb": after_load - before,
        "rss_ranked_mb": rss_mb("VmRSS") - before,
        "rss_peak_mb": rss_mb(),
        "heap_mb": held.nbytes / 2**20,
    }


def run_scenario(scenario: str, root: Path, reps: int, query: str) -> dict[str, Any]:
    phases = Phases()
    vectors = json.loads(query_vectors_path(cache_dir()).read_text())
    if scenario == "first":
        return first(root, query, phases, vectors)
    if scenario == "snapshot-build":
        return snapshot_build(root)
    if scenario == "snapshot-load":
        return snapshot_load(root)
    if scenario != "warm":
        raise SystemExit(f"unknown scenario {scenario}")
    install(phases, vectors)
    return warm(root, reps, phases)


def profile(target: str, root: Path, reps: int) -> None:
    """cProfile of warm searches of one mode, or of this fresh process's first hybrid search (``first``)."""
    install(Phases(), {query: dense_vector_for(query).tolist() for query in QUERIES})
    from onetool_code import api

    profiler = cProfile.Profile()
    if target == "first":
        profiler.runcall(api.run_search, query=QUERIES[0], path=str(root))
    else:
        for query in QUERIES:
            api.run_search(query=query, path=str(root), mode=target)
        profiler.enable()
        for _ in range(reps):
            for query in QUERIES:
                api.run_search(query=query, path=str(root), mode=target)
        profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(35)
    print(out.getvalue())


# -- The parent: scenarios in subprocesses, the command line, the report ------------------------------------------


def scenario_env(blas_threads: int | None, cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ, ONETOOL_CODE_CACHE_DIR=str(cache_dir))
    if blas_threads:  # OpenBLAS reads it when numpy is imported: it must be set before the process starts
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    return env


def in_subprocess(
    scenario: str, root: Path, env: dict[str, str], reps: int = 1, query: str = QUERIES[0]
) -> dict[str, Any]:
    """Run one scenario in a fresh interpreter; adds its wall time (start-up and imports included)."""
    command = [sys.executable, __file__, "--run", scenario, "--root", str(root), "--reps", str(reps)]
    started = time.perf_counter()
    done = subprocess.run([*command, "--query", query], capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{scenario} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_ms"] = wall * 1000
    return result


def child_cpu_s() -> float:
    """CPU seconds (user + system) of the children this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cli_search(root: Path, query: str, mode: str, base_url: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU milliseconds of ``python -m onetool_code search`` against the test server: an agent's
    one-shot call, start-up, imports and the embeddings request included."""
    command = [sys.executable, "-m", "onetool_code", "search", query, "--path", str(root), "--base-url", base_url]
    cpu, started = child_cpu_s(), time.perf_counter()
    done = subprocess.run([*command, "--mode", mode], capture_output=True, text=True, check=False, env=env, cwd=REPO)
    wall, cpu = time.perf_counter() - started, child_cpu_s() - cpu
    if done.returncode != 0 or "answered by words only" in done.stdout:
        raise SystemExit(f"search {query!r} --mode {mode} did not answer as asked:\n{done.stdout}\n{done.stderr}")
    return wall * 1000, cpu * 1000


def fmt_ms(value: float) -> str:
    return f"{value:,.2f} ms" if value < 10 else f"{value:,.1f} ms" if value < 1000 else f"{value / 1000:,.2f} s"


def verdict(holds: bool) -> str:
    return "**holds**" if holds else "**misses**"


def median(values: Iterator[float] | list[float]) -> float:
    return statistics.median(list(values))


def report(marker: dict[str, Any], args: argparse.Namespace, cache: Path) -> list[str]:
    root = Path(marker["root"])
    persisted = cache / "snapshot-cache"
    env = scenario_env(args.blas_threads, persisted)
    load_start = os.getloadavg()[0]
    out = [
        f"Corpus: {marker['chunks_total']:,} chunks x {marker['dims']} dims in {marker['files']:,} files "
        f"({', '.join(f'{name} {count:,}' for name, count in marker['chunks'].items())}; "
        f"{', '.join(f'{lang} {count:,}' for lang, count in list(marker['languages'].items())[:4])}), "
        f"indexed by our indexer in {marker['index_seconds']:.0f} s.",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs; Python {platform.python_version()}, numpy "
        f"{__import__('numpy').__version__}, duckdb {__import__('duckdb').__version__}, bm25s "
        f"{__import__('bm25s').__version__}; OpenBLAS threads: {args.blas_threads or 'default'}.",
        "",
    ]

    # The snapshot: made in an empty cache directory (as after a change of the index file), then mapped by
    # another fresh process. That directory holds the snapshot every later scenario reads.
    vectors = {query: dense_vector_for(query).tolist() for query in QUERIES}
    query_vectors_path(cache).write_text(json.dumps(vectors))
    shutil.rmtree(persisted, ignore_errors=True)
    _log("snapshot: make")
    built = in_subprocess("snapshot-build", root, env)
    _log("snapshot: map")
    loaded = in_subprocess("snapshot-load", root, env)

    _log(f"warm searches: {args.reps} x {len(QUERIES)} queries x {len(MODES)} modes x (engine, api)")
    warm_results = in_subprocess("warm", root, env, reps=args.reps)
    semantic = warm_results["semantic"]

    def ratio(mode: str, key: str) -> float:
        return warm_results[mode][key] / semantic[key]

    out += [
        f"**Warm searches** (one process, the snapshot mapped, its lexical index loaded; modes interleaved query by "
        f"query; median over the {len(QUERIES)} queries of each one's median of {args.reps} calls; CPU: all "
        "threads of the process)",
        "",
        "| mode | engine.run | / semantic | engine.run CPU | / semantic | slowest query | api.run_search "
        "(text answer) | / semantic |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for mode in MODES:
        r = warm_results[mode]
        out.append(
            f"| {mode} | {fmt_ms(r['engine_wall_ms'])} | {ratio(mode, 'engine_wall_ms'):.2f}x | "
            f"{fmt_ms(r['engine_cpu_ms'])} | {ratio(mode, 'engine_cpu_ms'):.2f}x | {fmt_ms(r['engine_wall_max_ms'])} | "
            f"{fmt_ms(r['api_wall_ms'])} | {ratio(mode, 'api_wall_ms'):.2f}x |"
        )
    labels = list(dict.fromkeys(label for mode in MODES for label in warm_results[mode]["phases_ms"]))
    out += [
        "",
        "Where a warm `engine.run` spends its wall time (ms per search, mean; an indented row is part of the row "
        "above it):",
        "",
        "| phase | " + " | ".join(MODES) + " |",
        "|---|" + "---:|" * len(MODES),
    ]
    for label in labels:
        if label.strip().startswith(("api.", "formatting.")):
            continue
        cells = [warm_results[mode]["phases_ms"].get(label) for mode in MODES]
        out.append(f"| {label} | " + " | ".join("" if c is None else f"{c:,.1f}" for c in cells) + " |")
    out += [
        "",
        "Per query, warm `engine.run` wall ms (semantic / lexical / hybrid): "
        + "; ".join(f"`{q}` " + " / ".join(f"{warm_results[m]['per_query'][q]:.0f}" for m in MODES) for q in QUERIES)
        + ".",
        "",
    ]

    # First searches, each in a fresh process; the CLI's modes interleaved query by query.
    _log("first searches: in-process phases")
    fresh = [in_subprocess("first", root, env, query=q) for q in QUERIES[: args.first_runs]]
    fresh_build = []
    for q in QUERIES[: args.build_runs]:
        with tempfile.TemporaryDirectory(prefix="hybrid-speed-snapshot-") as empty:
            fresh_build.append(in_subprocess("first", root, scenario_env(args.blas_threads, Path(empty)), query=q))
    unpersisted = "hybrid, no snapshot yet"
    rows: dict[str, list[tuple[float, float]]] = {mode: [] for mode in MODES}
    rows[unpersisted] = []
    imports = []
    for _ in range(args.first_runs):  # what the command line pays before its embeddings request can start
        cpu, started = child_cpu_s(), time.perf_counter()
        subprocess.run([sys.executable, "-c", "import openai"], check=True, env=env)
        imports.append(((time.perf_counter() - started) * 1000, (child_cpu_s() - cpu) * 1000))
    rows["python -c 'import openai'"] = imports
    with dense_server() as server:
        _log("first searches: the command line")
        for i, query in enumerate(QUERIES[: args.first_runs]):
            for mode in MODES:
                rows[mode].append(cli_search(root, query, mode, server.base_url, env))
            if i < args.build_runs:
                with tempfile.TemporaryDirectory(prefix="hybrid-speed-snapshot-") as empty:
                    empty_env = scenario_env(args.blas_threads, Path(empty))
                    rows[unpersisted].append(cli_search(root, query, "hybrid", server.base_url, empty_env))
    out += [
        f"**A process's first search** (fresh interpreter, the snapshot on disk; median of {args.first_runs} "
        f"processes, one query each; {args.build_runs} with no snapshot yet, which they make)",
        "",
        "| what | wall clock | slowest | CPU |",
        "|---|---:|---:|---:|",
    ]
    for name, samples in rows.items():
        mode, _, note = name.partition(", ")
        note = note or "snapshot on disk"
        what = (
            f"`{name}`: the embeddings client's import alone"
            if name.startswith("python")
            else f"`python -m onetool_code search --mode {mode}`, embeddings from the test server"
            f"{', ' + note if note else ''}"
        )
        out.append(
            f"| {what} | {fmt_ms(median(w for w, _ in samples))} | {fmt_ms(max(w for w, _ in samples))} | "
            f"{fmt_ms(median(c for _, c in samples))} |"
        )
    for label, runs in (("snapshot on disk", fresh), ("no snapshot yet", fresh_build)):
        out += [
            f"| hybrid in a fresh process, precomputed vectors, {label}: the whole process | "
            f"{fmt_ms(median(r['wall_ms'] for r in runs))} | {fmt_ms(max(r['wall_ms'] for r in runs))} | |",
            f"| ... importing onetool_code | {fmt_ms(median(r['import_ms'] for r in runs))} | | |",
            f"| ... the search (`api.run_search`) | {fmt_ms(median(r['search_ms'] for r in runs))} | | "
            f"{fmt_ms(median(r['search_cpu_ms'] for r in runs))} |",
        ]
    labels = list(dict.fromkeys(label for r in fresh + fresh_build for label in r["phases_ms"]))
    out += [
        "",
        "Phases of that first hybrid search (wall ms, median over the processes):",
        "",
        "| phase | snapshot on disk | no snapshot yet |",
        "|---|---:|---:|",
    ]
    for label in labels:
        cells = [[r["phases_ms"][label] for r in runs if label in r["phases_ms"]] for runs in (fresh, fresh_build)]
        out.append(f"| {label} | " + " | ".join(f"{median(c):,.1f}" if c else "" for c in cells) + " |")
    memory = warm_results["memory"]
    out += [
        "",
        "**The snapshot**",
        "",
        f"- made in {built['build_s']:.2f} s, the index file held {built['held_s']:.2f} s of it (reading "
        f"{built['documents']:,} chunks' rows {built['read_s']:.2f} s, and the vectors); the lexical index "
        f"{built['lexical_s']:.2f} s (bm25s' part {built['bm25s_s']:.2f} s; {built['vocabulary']:,} distinct "
        f"tokens, {built['postings']:,} postings); writing it all {built['save_s']:.2f} s",
        f"- on disk: {built['disk_mb']:.1f} MB, the lexical index {built['lexical_disk_mb']:.1f} MB of it",
        f"- mapped by a fresh process in {loaded['load_ms']:.0f} ms; its lexical index loaded in "
        f"{loaded['lexical_load_ms']:.0f} ms (the vocabulary is parsed, the arrays mapped); the first ranking "
        f"{loaded['first_rank_ms']:.1f} ms, later ones {loaded['later_rank_ms']:.1f} ms",
        f"- memory: resident growth while making it {built['rss_growth_mb']:.0f} MB (peak of that process "
        f"{built['rss_peak_mb']:.0f} MB); mapping it {loaded['rss_load_mb']:.0f} MB, and after ranking the "
        f"{len(QUERIES)} queries {loaded['rss_ranked_mb']:.0f} MB; heap held {loaded['heap_mb']:.0f} MB",
        f"- the warm process: {memory['start']:.0f} MB resident at start, {memory['semantic']:.0f} MB after "
        f"semantic searches, {memory['lexical']:.0f} MB after lexical ones, {memory['hybrid']:.0f} MB after hybrid "
        f"ones; peak {memory['peak']:.0f} MB; heap held by the snapshot {memory['heap_nbytes']:.0f} MB",
        "",
    ]
    lexical_ratio, hybrid_ratio = ratio("lexical", "engine_wall_ms"), ratio("hybrid", "engine_wall_ms")
    first_s = median(w for w, _ in rows["hybrid"]) / 1000
    out += [
        "**Targets** (issue 9)",
        "",
        f"- warm lexical <= 1.5x warm semantic: {lexical_ratio:.2f}x (engine.run; CPU "
        f"{ratio('lexical', 'engine_cpu_ms'):.2f}x; api.run_search {ratio('lexical', 'api_wall_ms'):.2f}x): "
        f"{verdict(lexical_ratio <= 1.5)}",
        f"- warm hybrid <= 2x warm semantic: {hybrid_ratio:.2f}x (engine.run; CPU "
        f"{ratio('hybrid', 'engine_cpu_ms'):.2f}x; api.run_search {ratio('hybrid', 'api_wall_ms'):.2f}x): "
        f"{verdict(hybrid_ratio <= 2)}",
        f"- first search <= 3 s (the command line, snapshot on disk): {first_s:.2f} s: {verdict(first_s <= 3)}",
        "",
        f"Load average (1 min): {load_start:.1f} at start, {os.getloadavg()[0]:.1f} at the end.",
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="warm calls per query and mode (default 5)")
    parser.add_argument("--first-runs", type=int, default=5, help="fresh processes per first-search row (max 10)")
    parser.add_argument("--build-runs", type=int, default=2, help="fresh processes without the persisted index")
    parser.add_argument(
        "--blas-threads",
        type=int,
        help="OPENBLAS_NUM_THREADS for the scenarios; 1 keeps a shared, busy machine from quantising BLAS calls "
        "to scheduler ticks (default: OpenBLAS's own choice)",
    )
    parser.add_argument("--setup-only", action="store_true", help="fetch and index the corpus, then stop")
    parser.add_argument("--profile", choices=(*MODES, "first"), help="cProfile warm searches of a mode, or a first one")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--query", default=QUERIES[0], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        print(json.dumps(run_scenario(args.run, Path(args.root), args.reps, args.query)))
        return
    cache = cache_dir()
    started = time.perf_counter()
    marker = ensure_corpus(cache)
    _log(f"corpus ready in {time.perf_counter() - started:.1f} s: {marker['root']} ({marker['chunks_total']:,} chunks)")
    if args.setup_only:
        return
    if args.profile:
        os.environ.setdefault("ONETOOL_CODE_CACHE_DIR", str(cache / "snapshot-cache"))
        if args.blas_threads:  # before numpy is first imported, which install() does
            os.environ["OPENBLAS_NUM_THREADS"] = str(args.blas_threads)
        profile(args.profile, Path(marker["root"]), args.reps)
        return
    print("\n".join(report(marker, args, cache)))


if __name__ == "__main__":
    main()
