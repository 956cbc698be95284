"""The real ChunkHound 6.1.0, installed into its own cached virtual environment, for compatibility tests.

Why a separate environment: ChunkHound pins ``duckdb==1.5.4`` and pulls in ~70 heavy dependencies (lancedb,
pyarrow, pymupdf, ...); our package runs on duckdb 2.x and must not depend on ChunkHound. The tests compare our
results with what ChunkHound itself does, so they drive its CLI as a subprocess.

Why a private HOME: ChunkHound runs ``INSTALL vss; LOAD vss`` on every DuckDB connection. ``INSTALL vss``
downloads from the internet, which these machines cannot reach, so ChunkHound dies before doing anything. The
extension file also ships on the package registry (``duckdb-extension-vss==<duckdb version>``); installing that
file once into DuckDB's extension directory (``$HOME/.duckdb/extensions/v1.5.4/linux_amd64/``) turns
ChunkHound's ``INSTALL vss`` into a no-op. A private HOME also keeps a developer's global ChunkHound config
(``~/.config/chunkhound``) out of the tests.

ChunkHound writes its index into the project (``<project>/.chunkhound/db/chunks.db``): index a *copy* of a
fixture (``shutil.copytree`` keeps mtimes), never the fixture in the repository.

Usage::

    env = ensure_chunkhound()                 # ~100 s the first time, then instant
    env.index(project, base_url)              # base_url of tests/openai_server.py
    hits = env.search(project, "parse config", base_url=base_url)

Run ``python tests/tooling/chunkhound_env.py`` to pre-warm the cache (CI does this before the tests).
Facts about ChunkHound's behaviour that these helpers rely on are in the helper's notes (chunkhound.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNKHOUND_VERSION = "6.1.0"
DEFAULT_MODEL = "text-embedding-3-small"
# ChunkHound 6.1.0 declares Requires-Python ">=3.10,<3.15".
_PYTHON_MIN = (3, 10)
_PYTHON_MAX_EXCLUSIVE = (3, 15)
_MARKER_NAME = "complete.json"
# Bump when the build recipe changes, so old caches are rebuilt rather than trusted.
_RECIPE = 1

# Environment that would leak a developer's setup into ChunkHound: a real key, or config that changes what the
# tests pass. Removed unless the caller passes it back explicitly.
_SCRUBBED_PREFIXES = ("CHUNKHOUND_",)
_SCRUBBED_NAMES = frozenset(
    {
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "VOYAGE_API_KEY",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
    }
)


def cache_dir() -> Path:
    """Where the environment lives; ``ONETOOL_CODE_CHUNKHOUND_DIR`` overrides it (e.g. a CI cache path)."""
    override = os.environ.get("ONETOOL_CODE_CHUNKHOUND_DIR")
    if override:
        return Path(override).expanduser().resolve()
    return Path.home() / ".cache" / "onetool-code" / f"chunkhound-{CHUNKHOUND_VERSION}"


def default_db_path(project: Path) -> Path:
    """Where ``chunkhound index <project>`` puts the DuckDB file when nothing configures another place."""
    return Path(project) / ".chunkhound" / "db" / "chunks.db"


def _log(message: str) -> None:
    """Progress goes to stderr: the install is slow, and a silent two minutes looks like a hang."""
    print(f"[chunkhound-env] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Hit:
    """One search result of ChunkHound, in ChunkHound's order.

    ``score`` is ChunkHound's cosine similarity: full float precision from ``search(..., precise=True)``,
    3 decimals when parsed from the CLI's text. It is None for a regex search run without an embedding
    provider (ChunkHound then prints no score). Regex hits come in path/start_line order, not score order.
    ``symbol``, ``chunk_type``, ``chunk_id``, ``language`` and ``content`` (untruncated) are only known in
    precise mode; the text output shows content cut to 1,000 characters and no symbol.
    """

    path: str
    start_line: int
    end_line: int
    score: float | None
    symbol: str | None = None
    chunk_type: str | None = None
    chunk_id: int | None = None
    language: str | None = None
    content: str | None = None


class ChunkHoundError(RuntimeError):
    """A ChunkHound command failed; the message carries its exit code and output, for the test report."""


# Run inside the venv: ChunkHound's own CLI, unchanged, except that the function that prints the results as
# text (3-decimal scores, content cut to 1,000 chars) is swapped for one that prints them as JSON. Query,
# config, embedding and database code paths are exactly those of `chunkhound search`.
_PRECISE_SEARCH = """
import json, sys
import chunkhound.api.cli.commands.search as _search

def _emit(formatter, result, query, is_regex):
    sys.stdout.write(MARK + json.dumps(result, default=str) + "\\n")
    sys.stdout.flush()

_search._format_search_results = _emit
from chunkhound.api.cli.main import main
sys.argv = ["chunkhound", *sys.argv[1:]]
main()
"""
_JSON_MARK = "@@CHUNKHOUND_SEARCH_JSON@@"


@dataclass(frozen=True)
class ChunkHoundEnv:
    """A ready ChunkHound installation: its venv, its private HOME, and helpers to drive its CLI."""

    root: Path
    venv: Path
    home: Path
    duckdb_version: str

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def executable(self) -> Path:
        return self.venv / "bin" / "chunkhound"

    # -- running ---------------------------------------------------------------------------------------------

    def environ(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment ChunkHound runs with: ours minus keys/config that would leak in, plus ``env``."""
        base = {
            k: v for k, v in os.environ.items() if k not in _SCRUBBED_NAMES and not k.startswith(_SCRUBBED_PREFIXES)
        }
        base["HOME"] = str(self.home)
        # Plain, unwrapped text for the parser: Rich honours NO_COLOR and COLUMNS when not on a terminal.
        base["NO_COLOR"] = "1"
        base["TERM"] = "dumb"
        base["COLUMNS"] = "10000"
        base["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{base.get('PATH', '')}"
        if env:
            base.update(env)
        return base

    def run(
        self,
        args: list[str],
        cwd: Path | str,
        env: Mapping[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``chunkhound *args`` in ``cwd``; never raises on a non-zero exit (tests assert on it)."""
        return subprocess.run(
            [str(self.executable), *args],
            cwd=str(cwd),
            env=self.environ(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def run_python(
        self,
        code: str,
        *args: str,
        cwd: Path | str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 300,
    ) -> subprocess.CompletedProcess[str]:
        """Run a snippet with the venv's Python (duckdb 1.5.4 with vss loadable), e.g. to inspect a DB."""
        return subprocess.run(
            [str(self.python), "-c", code, *args],
            cwd=str(cwd) if cwd is not None else None,
            env=self.environ(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    @staticmethod
    def _checked(proc: subprocess.CompletedProcess[str], what: str) -> subprocess.CompletedProcess[str]:
        if proc.returncode != 0:
            raise ChunkHoundError(
                f"{what} failed with exit code {proc.returncode}\n--- stdout ---\n{proc.stdout[-6000:]}"
                f"\n--- stderr ---\n{proc.stderr[-6000:]}"
            )
        return proc

    # -- configuration ---------------------------------------------------------------------------------------

    @staticmethod
    def embedding_args(base_url: str, model: str = DEFAULT_MODEL) -> list[str]:
        """CLI flags that point ChunkHound at an OpenAI-compatible server.

        Flags rather than a ``.chunkhound.json``: nothing is written into the project, and CLI flags outrank
        every config source (a project ``.chunkhound.json``, ``CHUNKHOUND_EMBEDDING__*`` env vars).
        """
        return ["--provider", "openai", "--model", model, "--base-url", base_url, "--api-key", "test-key"]

    @staticmethod
    def embedding_env(base_url: str, model: str = DEFAULT_MODEL) -> dict[str, str]:
        """The same settings as env vars, for commands that take no flags (e.g. ``chunkhound mcp``)."""
        return {
            "CHUNKHOUND_EMBEDDING__PROVIDER": "openai",
            "CHUNKHOUND_EMBEDDING__MODEL": model,
            "CHUNKHOUND_EMBEDDING__BASE_URL": base_url,
            "CHUNKHOUND_EMBEDDING__API_KEY": "test-key",
        }

    # -- commands --------------------------------------------------------------------------------------------

    def index(
        self,
        project: Path,
        base_url: str,
        model: str = DEFAULT_MODEL,
        *,
        extra_args: list[str] | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        """``chunkhound index <project>`` with embeddings from ``base_url``; raises ChunkHoundError on failure.

        ChunkHound sends each chunk's raw ``code`` as the embedding input (no path or header added), in
        batches, without ``encoding_format``.
        """
        proc = self.run(
            ["index", str(project), *self.embedding_args(base_url, model), *(extra_args or [])],
            cwd=project,
            timeout=timeout,
        )
        return self._checked(proc, "chunkhound index")

    def index_no_embeddings(
        self, project: Path, *, extra_args: list[str] | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """``chunkhound index --no-embeddings``: files and chunks only (no ``embeddings_*`` table is created)."""
        proc = self.run(["index", str(project), "--no-embeddings", *(extra_args or [])], cwd=project, timeout=timeout)
        return self._checked(proc, "chunkhound index --no-embeddings")

    def search(
        self,
        project: Path,
        query: str,
        *,
        base_url: str | None = None,
        model: str = DEFAULT_MODEL,
        page_size: int = 10,
        offset: int = 0,
        path_filter: str | None = None,
        regex: bool = False,
        precise: bool = True,
        timeout: float = 300,
    ) -> list[Hit]:
        """``chunkhound search``, as hits in ChunkHound's order.

        Semantic search needs ``base_url`` (the query is embedded by the server that embedded the chunks).
        A regex search given ``base_url`` also embeds the pattern and attaches each hit's similarity.

        ``precise=True`` (default) runs ChunkHound's own CLI code with its text printer swapped for JSON, to
        get full-precision scores and the untruncated chunk; ``precise=False`` runs the plain ``chunkhound``
        executable and parses its text (3-decimal scores). Both give the same hits in the same order.
        """
        args = ["search", query, str(project), "--page-size", str(page_size), "--offset", str(offset)]
        if regex:
            args.append("--regex")
        if path_filter is not None:
            args += ["--path-filter", path_filter]
        if base_url:
            args += self.embedding_args(base_url, model)
        if not precise:
            proc = self._checked(self.run(args, cwd=project, timeout=timeout), "chunkhound search")
            return parse_search_output(proc.stdout)
        code = _PRECISE_SEARCH.replace("MARK", repr(_JSON_MARK))
        proc = self._checked(self.run_python(code, *args, cwd=project, timeout=timeout), "chunkhound search")
        return parse_precise_output(proc.stdout)

    @contextlib.contextmanager
    def hold_write_lock(self, db_path: Path, timeout: float = 60) -> Iterator[subprocess.Popen[str]]:
        """Keep ``db_path`` open read-write in another process, as a running ChunkHound writer does.

        DuckDB's file lock is per process, so the holder is a separate process. It uses the venv's duckdb
        1.5.4 (ChunkHound's own version), so the file is never opened for writing by a newer DuckDB. While it
        runs, ``duckdb.connect(db_path, read_only=True)`` elsewhere fails at once with "IO Error: Could not set
        lock on file ...: Conflicting lock is held in <python> (PID n)" -- exactly as under ``chunkhound
        index``. Yields once the lock is held; the holder exits when the block ends.
        """
        code = (
            "import duckdb, sys\n"
            "con = duckdb.connect(sys.argv[1])\n"
            "con.execute('SELECT 1').fetchall()\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
            "con.close()\n"
        )
        proc = subprocess.Popen(
            [str(self.python), "-c", code, str(db_path)],
            env=self.environ(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = _readline_with_timeout(proc, timeout)
            if line.strip() != "locked":
                proc.kill()
                _, err = proc.communicate()
                raise ChunkHoundError(f"the lock holder did not start: {line!r}\n{err}")
            yield proc
        finally:
            if proc.poll() is None:
                if proc.stdin:
                    with contextlib.suppress(BrokenPipeError, OSError):
                        proc.stdin.close()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream:
                    with contextlib.suppress(OSError):
                        stream.close()


def _readline_with_timeout(proc: subprocess.Popen[str], timeout: float) -> str:
    """First stdout line of ``proc``, or "" if none came within ``timeout`` seconds (the process is killed)."""
    result: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        result.append(proc.stdout.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        proc.kill()
        reader.join(5)
    return result[0] if result else ""


# -- parsing -----------------------------------------------------------------------------------------------

# `chunkhound search` prints, per hit (Rich console, markup stripped, non-terminal):
#   [INFO] <empty>              <- info("\n[k] path") prints "[INFO] " then a line break
#   [k] src/app/config.py
#   [INFO] Similarity: 0.528    <- or "Score: 0.528"; absent for regex without an embedding provider
#   [INFO] Lines 17-28          <- "Lines 15" when start == end
#   ```
#   <content, cut to 997 chars + "..." if longer than 1000>
#   ```
_HIT_HEADER = re.compile(r"^\[(?P<n>\d+)\] (?P<path>.+)$")
_SCORE = re.compile(r"^\[INFO\] (?:Similarity|Score): (?P<score>-?\d+(?:\.\d+)?)$")
_LINES = re.compile(r"^\[INFO\] Lines (?P<start>\d+)(?:-(?P<end>\d+))?$")
_RESULTS = re.compile(r"^\[INFO\] Results: (?P<count>\d+) of (?P<total>\d+) \(showing (?P<first>\d+)-\d+\)$")


def parse_search_output(stdout: str) -> list[Hit]:
    """Parse the text of ``chunkhound search`` into hits.

    Anchored on the numbered header that follows a bare ``[INFO]`` line and on the expected next number, so
    chunk content (which may itself contain fences or brackets) is not mistaken for a header.
    """
    lines = stdout.splitlines()
    hits: list[Hit] = []
    expected: int | None = None
    count: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if expected is None:
            m = _RESULTS.match(line)
            if m:
                count, expected = int(m["count"]), int(m["first"])
            i += 1
            continue
        header = _HIT_HEADER.match(line)
        if header and int(header["n"]) == expected and i > 0 and lines[i - 1].rstrip() == "[INFO]":
            score: float | None = None
            start = end = None
            j = i + 1
            if j < len(lines) and (m := _SCORE.match(lines[j])):
                score = float(m["score"])
                j += 1
            if j < len(lines) and (m := _LINES.match(lines[j])):
                start = int(m["start"])
                end = int(m["end"]) if m["end"] else start
                j += 1
            if start is None or end is None:
                raise ValueError(f"hit [{expected}] has no line range: {lines[i : j + 1]!r}")
            hits.append(Hit(path=header["path"], start_line=start, end_line=end, score=score))
            expected += 1
            i = j
            continue
        i += 1
    if count is not None and len(hits) != count:
        raise ValueError(f"ChunkHound announced {count} results but {len(hits)} were parsed:\n{stdout}")
    return hits


def parse_precise_output(stdout: str) -> list[Hit]:
    """Hits from the JSON line that the precise-search shim prints."""
    for line in stdout.splitlines():
        if line.startswith(_JSON_MARK):
            payload: dict[str, Any] = json.loads(line[len(_JSON_MARK) :])
            return [_hit_from_result(r) for r in payload.get("results", [])]
    raise ValueError(f"no search result in ChunkHound's output:\n{stdout[-4000:]}")


def _hit_from_result(r: dict[str, Any]) -> Hit:
    score = r.get("score", r.get("similarity"))
    return Hit(
        path=str(r["file_path"]).replace(os.sep, "/"),
        start_line=int(r["start_line"]),
        end_line=int(r["end_line"]),
        score=float(score) if score is not None else None,
        # Semantic results name the symbol "symbol", regex results "name".
        symbol=r.get("symbol", r.get("name")),
        chunk_type=r.get("chunk_type"),
        chunk_id=r.get("chunk_id"),
        language=r.get("language"),
        content=r.get("content"),
    )


# -- building ----------------------------------------------------------------------------------------------


def _python_ok(version: tuple[int, int]) -> bool:
    return _PYTHON_MIN <= version < _PYTHON_MAX_EXCLUSIVE


def _pick_python() -> str:
    """The interpreter to build the venv from: this one if ChunkHound supports it, else python3.11/python3."""
    if _python_ok((sys.version_info[0], sys.version_info[1])):
        return sys.executable
    for name in ("python3.11", "python3.12", "python3"):
        path = shutil.which(name)
        if not path:
            continue
        out = subprocess.run(
            [path, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode == 0:
            major, minor = (int(x) for x in out.stdout.split())
            if _python_ok((major, minor)):
                return path
    raise ChunkHoundError(f"no Python >=3.10,<3.15 found for ChunkHound {CHUNKHOUND_VERSION}")


def _step(cmd: list[str], *, env: Mapping[str, str] | None = None, what: str) -> str:
    """Run one build step and report its time; raise with its output on failure."""
    _log(f"{what} ...")
    started = time.monotonic()
    proc = subprocess.run(
        cmd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ChunkHoundError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    _log(f"{what}: done in {time.monotonic() - started:.0f}s")
    return proc.stdout


_INSTALL_VSS = """
import duckdb, sys
con = duckdb.connect()
con.execute("INSTALL '" + sys.argv[1].replace("'", "''") + "'")
con.execute("LOAD vss")
row = con.execute("SELECT install_path FROM duckdb_extensions() WHERE extension_name = 'vss'").fetchone()
print(row[0])
"""


def _build(root: Path) -> ChunkHoundEnv:
    """Build the environment from scratch in ``root`` (which must not exist)."""
    started = time.monotonic()
    venv, home = root / "venv", root / "home"
    home.mkdir(parents=True)
    python = _pick_python()
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    _step([python, "-m", "venv", str(venv)], env=clean_env, what=f"creating a venv with {python}")
    vpy = str(venv / "bin" / "python")
    _step(
        [vpy, "-m", "pip", "install", "--no-input", f"chunkhound=={CHUNKHOUND_VERSION}"],
        env=clean_env,
        what=f"pip install chunkhound=={CHUNKHOUND_VERSION} (1.5-3 minutes)",
    )
    duckdb_version = _step(
        [vpy, "-c", "import duckdb; print(duckdb.__version__)"], env=clean_env, what="reading duckdb's version"
    ).strip()
    try:
        _step(
            [vpy, "-m", "pip", "install", "--no-input", "--no-deps", f"duckdb-extension-vss=={duckdb_version}"],
            env=clean_env,
            what=f"pip install duckdb-extension-vss=={duckdb_version}",
        )
    except ChunkHoundError as exc:
        raise ChunkHoundError(
            f"ChunkHound {CHUNKHOUND_VERSION} installed duckdb {duckdb_version}, but the package registry has no "
            f"duckdb-extension-vss=={duckdb_version} (or it failed to install). Without that extension file "
            f"ChunkHound cannot run offline: it runs INSTALL vss on every connection.\n{exc}"
        ) from exc
    package_dir = Path(
        _step(
            [vpy, "-c", "import duckdb_extension_vss, os; print(os.path.dirname(duckdb_extension_vss.__file__))"],
            env=clean_env,
            what="locating the vss wheel's files",
        ).strip()
    )
    # The wheel holds extensions/v<duckdb version>/vss.duckdb_extension (no platform folder, seen for 1.5.4).
    candidates = [
        *sorted(package_dir.glob(f"extensions/v{duckdb_version}/vss.duckdb_extension")),
        *sorted(package_dir.glob(f"extensions/v{duckdb_version}/*/vss.duckdb_extension")),
    ]
    if not candidates:
        found = [str(p.relative_to(package_dir)) for p in package_dir.rglob("*.duckdb_extension")]
        raise ChunkHoundError(f"no vss.duckdb_extension for v{duckdb_version} in {package_dir}: found {found}")
    ext_file = candidates[0]
    installed_at = _step(
        [vpy, "-c", _INSTALL_VSS, str(ext_file)],
        env={**clean_env, "HOME": str(home)},
        what="installing the vss extension into the private HOME",
    ).strip()
    env = ChunkHoundEnv(root=root, venv=venv, home=home, duckdb_version=duckdb_version)
    version = _step([str(env.executable), "--version"], env=env.environ(), what="checking chunkhound --version")
    marker = {
        "recipe": _RECIPE,
        "chunkhound": CHUNKHOUND_VERSION,
        "chunkhound_version_output": version.strip(),
        "duckdb": duckdb_version,
        "vss_extension_source": str(ext_file),
        "vss_extension_installed_at": installed_at,
        "python": python,
        "build_seconds": round(time.monotonic() - started, 1),
    }
    tmp = root / f".{_MARKER_NAME}.tmp"
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    tmp.replace(root / _MARKER_NAME)  # written last: its presence means "complete"
    _log(f"ready in {marker['build_seconds']}s at {root}")
    return env


def _load(root: Path) -> ChunkHoundEnv | None:
    """The finished environment in ``root``, or None if it is missing, half-built or from an older recipe."""
    try:
        marker = json.loads((root / _MARKER_NAME).read_text())
    except (OSError, ValueError):
        return None
    if marker.get("recipe") != _RECIPE or marker.get("chunkhound") != CHUNKHOUND_VERSION:
        return None
    env = ChunkHoundEnv(root=root, venv=root / "venv", home=root / "home", duckdb_version=str(marker["duckdb"]))
    if not (env.executable.exists() and env.python.exists()):
        return None
    return env


def ensure_chunkhound() -> ChunkHoundEnv:
    """Return the cached ChunkHound environment, building it first if needed.

    Concurrent callers (pytest-xdist workers, a CI pre-warm racing a test run) are serialised with an
    exclusive ``fcntl`` lock on a file beside the cache directory; whoever gets it second finds the marker and
    returns at once. A directory without the marker is a build that died half-way: it is removed and rebuilt.
    """
    root = cache_dir()
    env = _load(root)
    if env is not None:
        return env
    root.parent.mkdir(parents=True, exist_ok=True)
    lock_path = root.parent / f"{root.name}.lock"
    with lock_path.open("a+") as lock_file:
        _log(f"taking the build lock {lock_path}")
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            env = _load(root)
            if env is not None:
                return env
            if root.exists():
                _log(f"removing an incomplete environment at {root}")
                shutil.rmtree(root)
            try:
                return _build(root)
            except BaseException:
                # Leave no half-built tree behind (the next caller would remove it anyway).
                shutil.rmtree(root, ignore_errors=True)
                raise
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


if __name__ == "__main__":
    ensure_chunkhound()
