"""The public semble benchmark (development split): our search against semble 0.7.0 and ripgrep, same run.

Why: MinishLab's semble benchmark is a public code-search benchmark nobody on this team wrote, with a peer to
beat that runs here: semble itself, answering by words. This script runs the 7 repositories of its
development split (``../shared/benchmarks/semble-dev`` beside the repository, see its README; the rest of the benchmark is held
out and never touched) through three systems in one invocation and scores them exactly as semble scores the
tools it compares against:

- **ours**, through the library exactly as an agent calls it: ``onetool_code.search(query=q, path=root,
  mode=M, format="json", limit=10)`` over the real ChunkHound 6.1.0 index of the repository (no vectors:
  ``--no-embeddings``). ``hybrid`` (the default) then answers by words with a notice: that is the number to
  beat; ``lexical`` beside it (``--modes``). Also the bytes of the default answer (``format="text"``, the
  library's default limit) and the wall time of each json call, warm (one throwaway search per repository
  and mode first). ``onetool_code`` is imported normally, so ``PYTHONPATH=/other/checkout`` measures another
  checkout (its ``__file__`` is in the report's header). Our snapshots go to a fresh temporary
  ``ONETOOL_CODE_CACHE_DIR`` per run (``--our-cache DIR`` keeps them), never to the user's cache.
- **semble-bm25**: semble 0.7.0 (PyPI), ``SembleIndex.from_path(root).search(q, top_k=10, alpha=0.0)``, run
  by ``bench/semble_peer.py`` in semble's own venv with a stand-in for its embedding model (see that file).
  Bytes: semble's default MCP answer (top 5, 10 lines a chunk, JSON). Its index build is not timed in the
  latency; its searches are, in its process, warm.
- **ripgrep**: semble's own baseline (``benchmarks/baselines/ripgrep.py``, read for its facts): the whole query
  as a fixed string, ``rg --count --no-heading --ignore-case --hidden --glob '!.git' --fixed-strings``, files
  by match count, highest first, files of equal count in the order rg printed them (as semble's baseline
  does: rg's parallel walk, in principle any order; repeated runs here gave the same, 0.150, and ``--sort
  path`` would give 0.147). One addition: ``--glob`` excludes of ``.chunkhound/`` and ``.chunkhound.json``
  (ours, absent from semble's checkouts; they change nothing here). Its latency includes starting the
  process, as semble's baseline measures it. Without ``rg`` on PATH the row is skipped
  (``apt-get install ripgrep``).

Scoring (semble's ``benchmarks/metrics.py`` and ``data.py``): a system's answer is its hits' files,
deduplicated in rank order, the first 10 kept. A query's targets are ``relevant + secondary`` (file paths;
a line span, where given, is ignored at file level); each target has gain 1 at the rank of the first file
that matches it (equal paths, or one a ``/``-suffix of the other: the annotations are relative to the
repository, our paths to the benchmark root); two targets met by one file count once; IDCG over
``min(10, targets)``. NDCG@10 per query, the mean per repository, then the mean over repositories; per
category, the mean over repositories of each repository's category mean (a repository without the category
is left out). Beside it, on the same file lists: **R@k**, a file matching any target within rank k (share
of queries), and **MRR@10**, 1/rank of the first such file (0 past 10), averaged the same way (per
repository, then over repositories). fmtlib is also shown without its 6 stale ``core.h`` queries (at the
pinned commit ``core.h`` is a 7-line shim that includes ``base.h``). For semble-bm25 the report also gives
the figure as semble's ablation scores itself (ranks of chunks, not of deduplicated files; a target with a
line span needs an overlapping chunk), the rule of semble's ablation script (``baselines/ablations.py``).

Set up once, cached in ``~/.cache/onetool-code/bench/semble/`` (``--cache-dir``): the repositories extracted
from ``repos.tar.xz`` (less the packager's ``.prep.json``, not part of the repositories); each benchmark root
indexed by ``chunkhound index ROOT --no-embeddings`` (ChunkHound from ``tests/tooling/chunkhound_env.py``),
run from an empty folder (its workers put the current directory on ``sys.path``: a ``types.py`` there shadows
the standard library's), with ``ROOT/.chunkhound.json`` setting ``indexing.per_file_timeout_seconds`` to 0
(the 3 s default skips ``fastapi/routing.py`` and ``fmt/format.h`` on a loaded 2-core machine; ChunkHound
excludes that file from its own index); the index is checked (those two files have chunks, the config file is
not indexed; a gold file without chunks is reported); semble 0.7.0 pip-installed into its own venv (Python
3.11+; 3.11 is ``python3`` here; semble's own caches, its statistics and grammars, are kept in the bench's
cache too). Each step leaves a marker and is skipped when done. Nothing downloads at run time. The index lives in the project (``ROOT/.chunkhound/db/chunks.db``): this is our extracted copy.

Run from the repository root (setup about 3 minutes the first time, then each run about 40 s on 2 cores)::

    .venv-test/bin/python bench/semble.py                                   # all 14, all queries, all systems
    .venv-test/bin/python bench/semble.py --setup-only
    .venv-test/bin/python bench/semble.py --repos fastapi,gin --queries-per-repo 5 --no-semble
    .venv-test/bin/python bench/semble.py --per-query /tmp/semble_perquery.json --json-out /tmp/semble.json
    PYTHONPATH=/path/to/other/checkout .venv-test/bin/python bench/semble.py --no-semble --no-ripgrep

It prints Markdown and asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import onetool_code

REPO = Path(__file__).resolve().parents[1]
PEER = Path(__file__).resolve().with_name("semble_peer.py")
# The development split sits beside the repository (its ``../shared``), not in it.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "semble-dev"
SEMBLE_VERSION = "0.7.0"
SETUP_VERSION = 1  # bump when a setup step changes, so old markers are not trusted
TOP = 10
CATEGORIES = ("semantic", "architecture", "symbol")
DEFAULT_MODES = "hybrid,lexical"
SEMBLE = "semble-bm25"
RIPGREP = "ripgrep"
# Files the README saw ChunkHound's parse timeout skip: the index is useless for the benchmark without them.
MUST_INDEX = {"fastapi": ("routing.py",), "fmtlib": ("format.h",)}
CHUNKHOUND_CONFIG = {"indexing": {"per_file_timeout_seconds": 0}}
# fmtlib's stale gold: at the pinned commit core.h only includes base.h.
STALE_TARGET = "include/fmt/core.h"
# The system's own environment that would change what our calls answer (a key, a configured index or model).
_SCRUBBED_PREFIXES = ("CHUNKHOUND_", "OPENAI_", "VOYAGE_")


def _log(message: str) -> None:
    print(f"[semble-bench] {message}", file=sys.stderr, flush=True)


# -- the benchmark's data ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Repo:
    name: str
    language: str
    github: str
    revision: str
    benchmark_root: str  # "" = the repository root

    def root(self, cache: Path) -> Path:
        base = cache / "repos" / self.name
        return base / self.benchmark_root if self.benchmark_root else base


@dataclass(frozen=True)
class Query:
    repo: str
    number: int  # 0-based, in the annotation file's order
    text: str
    category: str
    relevant: tuple[str, ...]
    secondary: tuple[str, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        return self.relevant + self.secondary

    @property
    def stale(self) -> bool:
        return any(path_matches(t, STALE_TARGET) for t in self.targets)


def load_repos(data: Path) -> list[Repo]:
    repos = []
    for line in (data / "repos.tsv").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, language, github, revision, root = line.split("\t")[:5]
        repos.append(Repo(name, language, github, revision, "" if root == "-" else root))
    return repos


def _target_path(raw: str | dict[str, Any]) -> str:
    """A target is a path or ``{"path", "start_line", "end_line"}``; files are scored, so the path."""
    return raw if isinstance(raw, str) else str(raw["path"])


def load_queries(data: Path, repo: str) -> list[Query]:
    items = json.loads((data / "annotations" / f"{repo}.json").read_text())
    return [
        Query(
            repo=repo,
            number=i,
            text=item["query"],
            # semble infers a category when an annotation has none; every one of the development split has one.
            category=str(item["category"]),
            relevant=tuple(_target_path(t) for t in item.get("relevant", [])),
            secondary=tuple(_target_path(t) for t in item.get("secondary", [])),
        )
        for i, item in enumerate(items)
    ]


def raw_targets(data: Path, query: Query) -> list[str | dict[str, Any]]:
    """The targets as annotated (with their line spans), for semble's own chunk-level rule."""
    item = json.loads((data / "annotations" / f"{query.repo}.json").read_text())[query.number]
    return [*item.get("relevant", []), *item.get("secondary", [])]


# -- setup ---------------------------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "onetool-code" / "bench" / "semble"


def _marker(cache: Path, name: str) -> Path:
    return cache / "markers" / f"{name}.json"


def _read_marker(cache: Path, name: str) -> dict[str, Any] | None:
    try:
        marker = json.loads(_marker(cache, name).read_text())
    except (OSError, ValueError):
        return None
    return marker if marker.get("setup_version") == SETUP_VERSION else None


def _write_marker(cache: Path, name: str, content: dict[str, Any]) -> None:
    path = _marker(cache, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"setup_version": SETUP_VERSION, **content}, indent=2) + "\n")
    tmp.replace(path)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extract(cache: Path, data: Path) -> None:
    """The repositories from ``repos.tar.xz``, again (and every index with them) when the archive changed."""
    archive = data / "repos.tar.xz"
    digest = _sha256(archive)
    marker = _read_marker(cache, "repos")
    if marker is not None and marker.get("archive_sha256") == digest:
        return
    _log(f"extracting {archive}")
    target = cache / "repos"
    shutil.rmtree(target, ignore_errors=True)
    for old in (cache / "markers").glob("index-*.json"):
        old.unlink()
    tmp = Path(tempfile.mkdtemp(prefix="repos-", dir=cache))
    with tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    # The packager's note of where it checked each repository out: not part of any repository.
    for note in tmp.glob("*/.prep.json"):
        note.unlink()
    tmp.rename(target)
    _write_marker(cache, "repos", {"archive_sha256": digest})


# Run with ChunkHound's own Python (its duckdb 1.5.4): every indexed file and its number of chunks, as JSON.
_FILES_SQL = """
import duckdb, json, sys
con = duckdb.connect(sys.argv[1], read_only=True)
rows = con.execute(
    "SELECT f.path, count(c.id) FROM files f LEFT JOIN chunks c ON c.file_id = f.id GROUP BY f.path"
).fetchall()
con.close()
print(json.dumps({path: n for path, n in rows}))
"""


def _db(root: Path) -> Path:
    """Where ``chunkhound index ROOT`` puts its index when nothing configures another place."""
    return root / ".chunkhound" / "db" / "chunks.db"


def index_repo(cache: Path, env: Any, repo: Repo, queries: Sequence[Query]) -> dict[str, Any]:
    """The benchmark root indexed by the real ChunkHound, checked; skipped when its marker is there."""
    marker = _read_marker(cache, f"index-{repo.name}")
    root = repo.root(cache)
    db = _db(root)
    if marker is not None and db.is_file():
        return marker
    shutil.rmtree(root / ".chunkhound", ignore_errors=True)
    (root / ".chunkhound.json").write_text(json.dumps(CHUNKHOUND_CONFIG, indent=2) + "\n")
    neutral = cache / "neutral"
    shutil.rmtree(neutral, ignore_errors=True)
    neutral.mkdir(parents=True)
    _log(f"{repo.name}: chunkhound index {root} --no-embeddings")
    started = time.perf_counter()
    proc = env.run(["index", str(root), "--no-embeddings"], cwd=neutral, timeout=3600)
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or not db.is_file():
        raise SystemExit(
            f"Error: chunkhound index {root} failed (exit {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    check = env.run_python(_FILES_SQL, str(db), cwd=neutral)
    if check.returncode != 0:
        raise SystemExit(f"Error: reading {db} failed:\n{check.stderr[-4000:]}")
    chunks_per_file: dict[str, int] = json.loads(check.stdout)
    problems = [f"{name} has no chunks" for name in MUST_INDEX.get(repo.name, ()) if not chunks_per_file.get(name)]
    if ".chunkhound.json" in chunks_per_file:
        problems.append(".chunkhound.json is in the index")
    if problems:
        raise SystemExit(
            f"Error: ChunkHound's index of {root} is not usable: {'; '.join(problems)}. Its output:\n"
            f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    missing = sorted(
        {
            found
            for q in queries
            for t in q.targets
            for found in _files_on_disk(root, t)
            if not chunks_per_file.get(found)
        }
    )
    result = {
        "chunkhound_seconds": round(seconds, 1),
        "files": len(chunks_per_file),
        "chunks": sum(chunks_per_file.values()),
        "gold_files_without_chunks": missing,
    }
    _write_marker(cache, f"index-{repo.name}", result)
    _log(f"{repo.name}: {result['files']} files, {result['chunks']} chunks in {seconds:.0f} s")
    return result


def _files_on_disk(root: Path, target: str) -> list[str]:
    """The target's file under the benchmark root, as a path relative to it (a target is relative to the
    repository; the root may be a folder of it): [] when it is not there."""
    parts = Path(target).parts
    for start in range(len(parts)):
        candidate = Path(*parts[start:])
        if (root / candidate).is_file():
            return [candidate.as_posix()]
    return []


def _python_version(python: str) -> tuple[int, int] | None:
    proc = subprocess.run(
        [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return None
    major, minor = (int(x) for x in proc.stdout.split())
    return major, minor


def _pick_python() -> str:
    """semble 0.7.0 declares Requires-Python >=3.10; the peer runs with ``-P`` (3.11+): ``python3`` is 3.11
    here, else one of pyenv's."""
    pyenv = sorted((Path.home() / ".pyenv" / "versions").glob("3.1[1-4]*/bin/python3"))
    for python in [shutil.which("python3"), shutil.which("python3.11"), shutil.which("python3.12"), *map(str, pyenv)]:
        if python and (version := _python_version(python)) and (3, 11) <= version < (3, 15):
            return python
    raise SystemExit("Error: semble's venv needs a Python 3.11-3.14 (python3 on PATH or under ~/.pyenv/versions)")


def semble_python(cache: Path) -> Path:
    """semble 0.7.0 in its own venv (pip, once); its Python."""
    venv = cache / "semble-venv"
    python = venv / "bin" / "python"
    marker = _read_marker(cache, "semble-venv")
    if marker is not None and marker.get("semble") == SEMBLE_VERSION and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    base = _pick_python()
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    _log(f"creating semble's venv with {base}; pip install semble=={SEMBLE_VERSION} (about a minute)")
    started = time.perf_counter()
    for cmd in (
        [base, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--no-input", "--quiet", f"semble=={SEMBLE_VERSION}"],
    ):
        proc = subprocess.run(cmd, env=clean, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"Error: {' '.join(cmd)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    version = subprocess.run(
        [str(python), "-c", "import semble; print(semble.__version__)"], env=clean, capture_output=True, text=True
    ).stdout.strip()
    if version != SEMBLE_VERSION:
        raise SystemExit(f"Error: semble's venv has semble {version!r}, not {SEMBLE_VERSION}")
    _write_marker(
        cache, "semble-venv", {"semble": version, "python": base, "seconds": round(time.perf_counter() - started)}
    )
    return python


def setup(
    cache: Path, data: Path, repos: Sequence[Repo], queries: dict[str, list[Query]], want_semble: bool
) -> dict[str, Any]:
    cache.mkdir(parents=True, exist_ok=True)
    extract(cache, data)
    env = None
    indexes = {}
    for repo in repos:
        done = _read_marker(cache, f"index-{repo.name}") is not None and _db(repo.root(cache)).is_file()
        if not done and env is None:
            # Waits on the build lock when another process is building the environment right now.
            sys.path.insert(0, str(REPO / "tests"))  # the test tooling, as bench/django_corpus.py reads it
            from tooling.chunkhound_env import ensure_chunkhound

            env = ensure_chunkhound()
        indexes[repo.name] = index_repo(cache, env, repo, queries[repo.name])
    python = semble_python(cache) if want_semble else None
    return {"indexes": indexes, "semble_python": str(python) if python else None}


# -- running the systems -------------------------------------------------------------------------------------


@dataclass
class Answer:
    """One system's answer to one query: the first 10 distinct files, in rank order."""

    files: list[str] = field(default_factory=list)
    ms: float | None = None
    answer_bytes: int | None = None
    error: str | None = None
    chunks: list[dict[str, Any]] | None = None  # semble's ranked chunks, for its own chunk-level rule
    notice: str | None = None  # ours: the answer's notice (hybrid over an index without vectors says so)
    overlapping: bool = False  # ours: two results of one file share a line


def distinct_files(paths: Sequence[str], top: int = TOP) -> list[str]:
    seen: list[str] = []
    for path in paths:
        path = path.replace("\\", "/")
        if path not in seen:
            seen.append(path)
            if len(seen) == top:
                break
    return seen


def run_ours(root: Path, queries: Sequence[Query], mode: str) -> list[Answer]:
    """Every query through the library as an agent calls it; warm (one throwaway search first)."""
    onetool_code.search(query=queries[0].text, path=str(root), mode=mode, format="json", limit=TOP)
    answers = []
    for q in queries:
        started = time.perf_counter()
        result = onetool_code.search(query=q.text, path=str(root), mode=mode, format="json", limit=TOP)
        ms = (time.perf_counter() - started) * 1000
        text = onetool_code.search(query=q.text, path=str(root), mode=mode)
        answer = Answer(ms=ms, answer_bytes=len(str(text).encode("utf-8")))
        if isinstance(result, dict) and isinstance(result.get("results"), list):
            answer.files = distinct_files([str(hit["file_path"]) for hit in result["results"]])
            answer.notice = result.get("notice")
            answer.overlapping = overlapping(result["results"])
        else:
            answer.error = str(result.get("error") if isinstance(result, dict) else result)[:300]
        answers.append(answer)
    return answers


def overlapping(results: Sequence[dict[str, Any]]) -> bool:
    """Two results of one file share a line."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for r in results:
        spans.setdefault(str(r["file_path"]), []).append((int(r["start_line"]), int(r["end_line"])))
    return any(b[0] <= a[1] for s in spans.values() for a, b in zip(sorted(s), sorted(s)[1:], strict=False))


def run_semble(
    python: Path, cache: Path, roots: dict[str, Path], queries: dict[str, list[Query]]
) -> tuple[dict[str, list[Answer]], dict[str, Any]]:
    """semble-bm25 over every repository, one process of semble's venv (``bench/semble_peer.py``)."""
    private = cache / "semble-cache"  # semble's savings statistics land here (fresh each run), not in ~/.cache/semble
    shutil.rmtree(private, ignore_errors=True)
    private.mkdir(parents=True)
    request = {
        "seed": 0,
        "dim": 256,
        "top_k": TOP,
        "repos": [
            {"name": name, "root": str(root), "queries": [q.text for q in queries[name]]}
            for name, root in roots.items()
        ],
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # XDG_CACHE_HOME: semble-grammars extracts its tree-sitter libraries (from its wheel) to
    # $XDG_CACHE_HOME/semble/grammars, once; kept beside the rest of the bench's cache.
    env.update(
        {
            "SEMBLE_CACHE_LOCATION": str(private),
            "XDG_CACHE_HOME": str(cache / "semble-xdg"),
            "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    with tempfile.TemporaryDirectory(prefix="semble-peer-") as tmp:
        request_file, result_file = Path(tmp) / "request.json", Path(tmp) / "result.json"
        request_file.write_text(json.dumps(request))
        # -P: bench/ must not be on sys.path, where `import semble` would find this file.
        proc = subprocess.run(
            [str(python), "-P", str(PEER), str(request_file), str(result_file)],
            env=env,
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            stderr=None,
            check=False,
            timeout=3600,
        )
        if proc.returncode != 0:
            raise SystemExit(f"Error: semble's peer failed with exit code {proc.returncode}")
        result = json.loads(result_file.read_text())
    answers: dict[str, list[Answer]] = {}
    info: dict[str, Any] = {"semble": result["semble"], "model": result["model"], "repos": {}}
    for name, got in result["repos"].items():
        answers[name] = [
            Answer(
                files=distinct_files([c["path"] for c in a["chunks"]]),
                ms=a["ms"],
                answer_bytes=a["answer_bytes"],
                chunks=a["chunks"],
            )
            for a in got["answers"]
        ]
        info["repos"][name] = {k: got[k] for k in ("index_seconds", "chunks", "files")}
    return answers, info


def ripgrep_command(query: str, root: Path) -> list[str]:
    return [
        "rg", "--count", "--no-heading", "--ignore-case", "--hidden", "--glob", "!.git",
        "--glob", "!.chunkhound", "--glob", "!.chunkhound.json",
        "--fixed-strings", "--", query, str(root),
    ]  # fmt: skip


def run_ripgrep(root: Path, queries: Sequence[Query]) -> list[Answer]:
    answers = []
    for q in queries:
        started = time.perf_counter()
        proc = subprocess.run(
            ripgrep_command(q.text, root), capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
        )
        ms = (time.perf_counter() - started) * 1000
        if proc.returncode not in (0, 1):  # 1: no match
            answers.append(Answer(ms=ms, error=proc.stderr.strip()[:300]))
            continue
        counted = []
        for line in proc.stdout.splitlines():
            path, _, count = line.rpartition(":")
            counted.append((Path(path).relative_to(root).as_posix(), int(count)))
        counted.sort(key=lambda pc: -pc[1])  # stable: equal counts stay in rg's order, as semble's baseline has them
        answers.append(Answer(files=[p for p, _ in counted[:TOP]], ms=ms))
    return answers


# -- scoring -------------------------------------------------------------------------------------------------


def path_matches(found: str, target: str) -> bool:
    """semble's rule: equal, or one path a ``/``-suffix of the other."""
    a, b = found.replace("\\", "/"), target.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def first_rank(files: Sequence[str], target: str) -> int | None:
    return next((rank for rank, f in enumerate(files[:TOP], start=1) if path_matches(f, target)), None)


def ndcg(ranks: set[int], n_targets: int) -> float:
    if n_targets == 0:
        return 0.0
    dcg = sum(1 / math.log2(rank + 1) for rank in ranks if 1 <= rank <= TOP)
    ideal = sum(1 / math.log2(i + 1) for i in range(1, min(TOP, n_targets) + 1))
    return dcg / ideal


def score(query: Query, files: Sequence[str]) -> dict[str, Any]:
    ranks = {r for t in query.targets if (r := first_rank(files, t)) is not None}
    best = min(ranks) if ranks else None
    return {
        "ndcg10": ndcg(ranks, len(query.targets)),
        "first_rank": best,
        "r1": float(best is not None and best <= 1),
        "r5": float(best is not None and best <= 5),
        "r10": float(best is not None),
        "mrr10": 1 / best if best else 0.0,
    }


def chunk_ndcg(targets: Sequence[str | dict[str, Any]], chunks: Sequence[dict[str, Any]]) -> float:
    """semble's ablation rule: a target's rank is that of the first chunk (not file) covering it; a target
    with a line span needs a chunk that overlaps it."""
    ranks = set()
    for t in targets:
        path = _target_path(t)
        span = (t.get("start_line"), t.get("end_line")) if isinstance(t, dict) else (None, None)
        for rank, c in enumerate(chunks[:TOP], start=1):
            if not path_matches(c["path"], path):
                continue
            if span[0] is not None and span[1] is not None and (c["end_line"] < span[0] or c["start_line"] > span[1]):
                continue
            ranks.add(rank)
            break
    return ndcg(ranks, len(targets))


METRICS = ("ndcg10", "r1", "r5", "r10", "mrr10")


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def repo_means(scored: Sequence[tuple[Query, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {m: _mean([s[m] for _, s in scored]) for m in METRICS}
    out["n"] = len(scored)
    out["per_category"] = {
        c: _mean([s["ndcg10"] for q, s in scored if q.category == c])
        for c in CATEGORIES
        if any(q.category == c for q, _ in scored)
    }
    return out


def overall(per_repo: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Means over repositories (semble's macro average), per category over the repositories that have it."""
    out: dict[str, Any] = {m: _mean([r[m] for r in per_repo.values() if r[m] is not None]) for m in METRICS}
    out["per_category"] = {
        c: _mean([r["per_category"][c] for r in per_repo.values() if c in r["per_category"]]) for c in CATEGORIES
    }
    return out


def summarize(
    systems: dict[str, dict[str, list[Answer]]], queries: dict[str, list[Query]], data: Path
) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for system, by_repo in systems.items():
        per_repo: dict[str, dict[str, Any]] = {}
        clean: dict[str, dict[str, Any]] = {}
        all_answers = []
        for repo, answers in by_repo.items():
            scored = [(q, score(q, a.files)) for q, a in zip(queries[repo], answers, strict=True)]
            per_repo[repo] = repo_means(scored)
            clean[repo] = repo_means([(q, s) for q, s in scored if not q.stale]) if repo == "fmtlib" else per_repo[repo]
            all_answers.extend(answers)
        sizes = [a.answer_bytes for a in all_answers if a.answer_bytes is not None]
        times = [a.ms for a in all_answers if a.ms is not None]
        entry = {
            "overall": overall(per_repo),
            "overall_fmtlib_without_stale": overall(clean),
            "per_repo": per_repo,
            "fmtlib_without_stale": clean.get("fmtlib"),
            "bytes_median": statistics.median(sizes) if sizes else None,
            "ms_median": statistics.median(times) if times else None,
            "errors": sum(1 for a in all_answers if a.error),
            "overlapping": sum(1 for a in all_answers if a.overlapping),
        }
        if all(a.chunks is not None for a in all_answers) and all_answers:
            per_repo_chunk = {
                repo: _mean(
                    [
                        chunk_ndcg(raw_targets(data, q), a.chunks or [])
                        for q, a in zip(queries[repo], answers, strict=True)
                    ]
                )
                for repo, answers in by_repo.items()
            }
            entry["chunk_rule_ndcg10"] = _mean([v for v in per_repo_chunk.values() if v is not None])
            entry["chunk_rule_per_repo"] = per_repo_chunk
        summary[system] = entry
    return summary


# -- output --------------------------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _int(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def markdown(summary: dict[str, Any], repos: Sequence[Repo], queries: dict[str, list[Query]], header: list[str]) -> str:
    out = [*header, ""]
    out.append(
        "| system | NDCG@10 | semantic | architecture | symbol | R@1 | R@5 | R@10 | MRR@10 | answer bytes (median) | latency ms (median) |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for system, s in summary.items():
        o = s["overall"]
        cats = " | ".join(_f(o["per_category"].get(c)) for c in CATEGORIES)
        out.append(
            f"| {system} | **{_f(o['ndcg10'])}** | {cats} | {_pct(o['r1'])} | {_pct(o['r5'])} | {_pct(o['r10'])} "
            f"| {_f(o['mrr10'])} | {_int(s['bytes_median'])} | {_f(s['ms_median'], 1)} |"
        )
    names = [r.name for r in repos if r.name in queries]
    out.append("\nNDCG@10 per repository\n")
    out.append("| repository | language | queries | " + " | ".join(summary) + " |")
    out.append("|---|---|---:|" + "---:|" * len(summary))
    lang = {r.name: r.language for r in repos}
    for name in names:
        cells = " | ".join(_f(s["per_repo"][name]["ndcg10"]) for s in summary.values())
        out.append(f"| {name} | {lang[name]} | {len(queries[name])} | {cells} |")
    if "fmtlib" in names:
        stale = sum(1 for q in queries["fmtlib"] if q.stale)
        cells = " | ".join(_f(s["fmtlib_without_stale"]["ndcg10"]) for s in summary.values())
        out.append(
            f"| fmtlib without its {stale} stale core.h queries | cpp | {len(queries['fmtlib']) - stale} | {cells} |"
        )
    cells = " | ".join(f"**{_f(s['overall']['ndcg10'])}**" for s in summary.values())
    out.append(f"| mean over repositories | | {sum(len(queries[n]) for n in names)} | {cells} |")
    if "fmtlib" in names:
        cells = " | ".join(_f(s["overall_fmtlib_without_stale"]["ndcg10"]) for s in summary.values())
        out.append(f"| mean, fmtlib without core.h queries | | | {cells} |")
    for system, s in summary.items():
        if "chunk_rule_ndcg10" in s:
            out.append(
                f"\n{system} scored by semble's own ablation rule (ranks of its chunks, line spans checked): "
                f"NDCG@10 {_f(s['chunk_rule_ndcg10'])}."
            )
        if s["errors"]:
            out.append(f"\n{system}: {s['errors']} queries answered with an error (scored as misses).")
        if system.startswith("onetool-code"):
            out.append(f"\n{system}: {s['overlapping']} answers with two results of one file that share a line.")
    return "\n".join(out)


def per_query_json(
    systems: dict[str, dict[str, list[Answer]]], queries: dict[str, list[Query]], data: Path
) -> list[dict[str, Any]]:
    rows = []
    for repo, qs in queries.items():
        for i, q in enumerate(qs):
            entry: dict[str, Any] = {
                "repo": repo,
                "query": q.text,
                "category": q.category,
                "relevant": list(q.relevant),
                "secondary": list(q.secondary),
                "stale": q.stale,
                "systems": {},
            }
            for system, by_repo in systems.items():
                a = by_repo[repo][i]
                s = score(q, a.files)
                entry["systems"][system] = {
                    "top10": a.files,
                    "ndcg10": round(s["ndcg10"], 4),
                    "first_rank": s["first_rank"],
                    "ms": None if a.ms is None else round(a.ms, 1),
                    "answer_bytes": a.answer_bytes,
                    "error": a.error,
                }
                if a.notice:
                    entry["systems"][system]["notice"] = a.notice
                if a.chunks is not None:
                    entry["systems"][system]["chunk_rule_ndcg10"] = round(chunk_ndcg(raw_targets(data, q), a.chunks), 4)
            rows.append(entry)
    return rows


def _checkout_of(module_file: str) -> str:
    """The commit of the checkout a module comes from, when it is a git work tree (read-only git)."""
    where = str(Path(module_file).parent)
    # GIT_OPTIONAL_LOCKS=0: status must not refresh the index file of a work tree someone may be using.
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    if shutil.which("git") is None:
        return "git not found"
    head = subprocess.run(["git", "-C", where, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, env=env)
    if head.returncode != 0:
        return "not a git checkout"
    status = subprocess.run(
        ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, env=env
    )
    return head.stdout.strip() + (" with uncommitted changes" if status.stdout.strip() else "")


def _tool_version(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "not found"


# -- main ----------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"the benchmark's folder (default {DEFAULT_DATA})"
    )
    parser.add_argument("--cache-dir", type=Path, help="setup cache (default ~/.cache/onetool-code/bench/semble)")
    parser.add_argument("--repos", help="comma-separated repository names (default: every one in the folder)")
    parser.add_argument("--queries-per-repo", type=int, help="the first N queries of each repository (quick runs)")
    parser.add_argument(
        "--modes", default=DEFAULT_MODES, help=f"our search modes, comma-separated (default {DEFAULT_MODES})"
    )
    parser.add_argument("--no-semble", action="store_true", help="leave out semble-bm25")
    parser.add_argument("--no-ripgrep", action="store_true", help="leave out ripgrep")
    parser.add_argument("--setup-only", action="store_true", help="extract, index, install semble, and stop")
    parser.add_argument("--our-cache", type=Path, help="keep our snapshots here (default: a fresh temporary folder)")
    parser.add_argument("--per-query", type=Path, help="write every query's gold, each system's top 10 and NDCG here")
    parser.add_argument("--json-out", type=Path, help="write the summary as JSON here")
    args = parser.parse_args(argv)

    data = args.data.resolve()
    cache = (args.cache_dir or default_cache_dir()).expanduser().resolve()
    all_repos = load_repos(data)
    wanted = [n.strip() for n in args.repos.split(",")] if args.repos else [r.name for r in all_repos]
    unknown = sorted(set(wanted) - {r.name for r in all_repos})
    if unknown:
        print(
            f"Error: unknown repositories {', '.join(unknown)}; known: {', '.join(r.name for r in all_repos)}",
            file=sys.stderr,
        )
        return 2
    repos = [r for r in all_repos if r.name in wanted]
    all_queries = {r.name: load_queries(data, r.name) for r in repos}
    queries = {name: qs[: args.queries_per_repo] if args.queries_per_repo else qs for name, qs in all_queries.items()}
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]

    started = time.perf_counter()
    ready = setup(cache, data, repos, all_queries, want_semble=not args.no_semble)
    setup_seconds = time.perf_counter() - started
    _log(f"setup: {setup_seconds:.1f} s")
    if args.setup_only:
        print(json.dumps(ready, indent=2))
        return 0

    roots = {r.name: r.root(cache) for r in repos}
    for key in [k for k in os.environ if k.startswith(_SCRUBBED_PREFIXES)]:
        del os.environ[key]
    run_started = time.perf_counter()
    systems: dict[str, dict[str, list[Answer]]] = {}
    temporary = None if args.our_cache else tempfile.TemporaryDirectory(prefix="onetool-code-semble-")
    our_cache = args.our_cache.resolve() if args.our_cache else Path(temporary.name) if temporary else None
    os.environ["ONETOOL_CODE_CACHE_DIR"] = str(our_cache)
    try:
        for mode in modes:
            name = f"onetool-code {mode}"
            systems[name] = {}
            for repo in repos:
                t0 = time.perf_counter()
                systems[name][repo.name] = run_ours(roots[repo.name], queries[repo.name], mode)
                _log(f"{name}: {repo.name}, {len(queries[repo.name])} queries in {time.perf_counter() - t0:.1f} s")
    finally:
        if temporary is not None:
            temporary.cleanup()
    semble_info = None
    if not args.no_semble:
        t0 = time.perf_counter()
        systems[SEMBLE], semble_info = run_semble(Path(ready["semble_python"]), cache, roots, queries)
        _log(f"{SEMBLE}: {time.perf_counter() - t0:.1f} s")
    rg_version = _tool_version(["rg", "--version"]) if shutil.which("rg") else None
    if not args.no_ripgrep:
        if rg_version is None:
            _log("ripgrep: rg is not on PATH, row skipped; install it with: apt-get install ripgrep")
        else:
            systems[RIPGREP] = {r.name: run_ripgrep(roots[r.name], queries[r.name]) for r in repos}
    run_seconds = time.perf_counter() - run_started

    summary = summarize(systems, queries, data)
    chunkhound = ready["indexes"]
    header = [
        f"{'semble benchmark, development split' if data == DEFAULT_DATA.resolve() else f'questions of {data}'}: "
        f"{len(repos)} repositories, {sum(map(len, queries.values()))} queries "
        f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"- onetool_code: `{onetool_code.__file__}` ({_checkout_of(onetool_code.__file__)}); modes {', '.join(modes)}",
        "- index: ChunkHound 6.1.0, `--no-embeddings`: "
        + ", ".join(f"{n} {chunkhound[n]['files']} files / {chunkhound[n]['chunks']:,} chunks" for n in chunkhound),
    ]
    if semble_info is not None:
        header.append(
            f"- semble {semble_info['semble']} (alpha=0.0, stand-in vectors): "
            + ", ".join(f"{n} {v['chunks']:,} chunks" for n, v in semble_info["repos"].items())
        )
    header += [
        f"- ripgrep: {rg_version or 'not found (apt-get install ripgrep)'}",
        f"- machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; Python {sys.version.split()[0]}",
        f"- setup {setup_seconds:.0f} s, run {run_seconds:.0f} s",
    ]
    missing = {n: v["gold_files_without_chunks"] for n, v in chunkhound.items() if v["gold_files_without_chunks"]}
    if missing:
        header.append(f"- gold files ChunkHound made no chunk of: {missing}")
    print(markdown(summary, repos, queries, header))

    if args.per_query:
        args.per_query.parent.mkdir(parents=True, exist_ok=True)
        args.per_query.write_text(json.dumps(per_query_json(systems, queries, data), indent=1) + "\n")
        _log(f"per-query details: {args.per_query}")
    if args.json_out:
        report = {
            "onetool_code": onetool_code.__file__,
            "checkout": _checkout_of(onetool_code.__file__),
            "repos": [r.name for r in repos],
            "queries": {n: len(q) for n, q in queries.items()},
            "indexes": chunkhound,
            "semble": semble_info,
            "ripgrep": rg_version,
            "setup_seconds": round(setup_seconds, 1),
            "run_seconds": round(run_seconds, 1),
            "systems": summary,
        }
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")
        _log(f"summary: {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
