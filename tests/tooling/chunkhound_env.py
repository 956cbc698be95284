"""The real ChunkHound 6.1.0, installed into its own cached virtual environment, for compatibility tests.

Why a separate environment: ChunkHound pins ``duckdb==1.5.4`` and drags in ~70 heavy dependencies (lancedb,
pyarrow, pymupdf, ...); our own package must run on duckdb 2.x and must not depend on ChunkHound at all. The
tests compare our results with what ChunkHound itself does, so they drive its CLI as a subprocess.

Why a dedicated HOME: ChunkHound runs ``INSTALL vss; LOAD vss`` on every DuckDB connection. ``INSTALL vss``
downloads from the internet, which these machines cannot reach, so ChunkHound dies before doing anything. The
extension file also ships on the package registry (``duckdb-extension-vss==<duckdb version>``); installing
that file once into DuckDB's extension directory (``$HOME/.duckdb/extensions/...``) makes ChunkHound's
``INSTALL vss`` a no-op. Keeping that HOME private also keeps a developer's global ChunkHound config
(``~/.config/chunkhound``) and DuckDB extensions out of the tests.

Usage::

    env = ensure_chunkhound()            # ~3 min the first time, then instant
    env.index(project, base_url)         # base_url of tests/openai_server.py
    hits = env.search(project, "parse config", base_url=base_url)

Run ``python tests/tooling/chunkhound_env.py`` to pre-warm the cache (CI does this before the tests).
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
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

CHUNKHOUND_VERSION = "6.1.0"
# ChunkHound 6.1.0 declares Requires-Python ">=3.10,<3.15".
_PYTHON_MIN = (3, 10)
_PYTHON_MAX_EXCLUSIVE = (3, 15)
_MARKER_NAME = "complete.json"
# Bump when the build recipe changes, so old caches are rebuilt rather than trusted.
_RECIPE = 1

# Environment variables that would leak a developer's setup into ChunkHound's run: a real key, or config that
# outranks what the tests pass. They are removed unless the caller passes them explicitly.
_SCRUBBED_PREFIXES = ("CHUNKHOUND_",)
_SCRUBBED_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "VOYAGE_API_KEY", "PYTHONPATH",
                   "VIRTUAL_ENV", "PYTHONHOME")


def cache_dir() -> Path:
    """Where the environment lives; ``ONETOOL_CODE_CHUNKHOUND_DIR`` overrides it (e.g. for a CI cache path)."""
    override = os.environ.get("ONETOOL_CODE_CHUNKHOUND_DIR")
    if override:
        return Path(override).expanduser().resolve()
    return Path.home() / ".cache" / "onetool-code" / f"chunkhound-{CHUNKHOUND_VERSION}"


def _log(message: str) -> None:
    """Progress goes to stderr: the install is slow and a silent three minutes looks like a hang."""
    print(f"[chunkhound-env] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Hit:
    """One result of ``chunkhound search``, as the CLI prints it.

    ``score`` is the similarity ChunkHound printed (semantic: cosine similarity, printed with 3 decimals; regex:
    ChunkHound prints none and this is 1.0). ``symbol`` and ``chunk_type`` are None when not printed.
    """

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None = None
    chunk_type: str | None = None


class ChunkHoundError(RuntimeError):
    """A ChunkHound command failed; the message carries its exit code and output, for the test report."""


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
            k: v
            for k, v in os.environ.items()
            if k not in _SCRUBBED_NAMES and not k.startswith(_SCRUBBED_PREFIXES)
        }
        base["HOME"] = str(self.home)
        # No colour/width games: the parser reads plain text.
        base["NO_COLOR"] = "1"
        base["TERM"] = "dumb"
        base["COLUMNS"] = "200"
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
        self, code: str, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run a snippet with the venv's Python (duckdb 1.5.4, vss available), e.g. to inspect a DB."""
        return subprocess.run(
            [str(self.python), "-c", code, *args],
            env=self.environ(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def _checked(self, proc: subprocess.CompletedProcess[str], what: str) -> subprocess.CompletedProcess[str]:
        if proc.returncode != 0:
            raise ChunkHoundError(
                f"{what} failed with exit code {proc.returncode}\n--- stdout ---\n{proc.stdout}"
                f"\n--- stderr ---\n{proc.stderr}"
            )
        return proc

    # -- configuration ---------------------------------------------------------------------------------------

    @staticmethod
    def embedding_env(base_url: str, model: str = "text-embedding-3-small") -> dict[str, str]:
        """Env vars that point ChunkHound at an OpenAI-compatible server.

        Env vars rather than a ``.chunkhound.json`` so the project directory (a shared fixture) is not
        modified. They rank below a project ``.chunkhound.json``: a fixture must not carry one.
        """
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
        model: str = "text-embedding-3-small",
        *,
        extra_args: list[str] | None = None,
        timeout: float = 600,
    ) -> subprocess.CompletedProcess[str]:
        """``chunkhound index <project>`` with embeddings from ``base_url``; raises ChunkHoundError on failure."""
        proc = self.run(
            ["index", str(project), *(extra_args or [])],
            cwd=project,
            env=self.embedding_env(base_url, model),
            timeout=timeout,
        )
        return self._checked(proc, "chunkhound index")

    def index_no_embeddings(
        self, project: Path, *, extra_args: list[str] | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """``chunkhound index --no-embeddings``: chunks only, no server needed (regex search still works)."""
        proc = self.run(
            ["index", str(project), "--no-embeddings", *(extra_args or [])], cwd=project, timeout=timeout
        )
        return self._checked(proc, "chunkhound index --no-embeddings")

    def search(
        self,
        project: Path,
        query: str,
        *,
        base_url: str | None = None,
        model: str = "text-embedding-3-small",
        page_size: int = 10,
        offset: int = 0,
        path_filter: str | None = None,
        regex: bool = False,
        timeout: float = 300,
    ) -> list[Hit]:
        """``chunkhound search``, parsed into hits in ChunkHound's order.

        Semantic search needs ``base_url`` (the query is embedded by the same server that embedded the chunks).
        """
        args = ["search", query, str(project), "--page-size", str(page_size), "--offset", str(offset)]
        if regex:
            args.append("--regex")
        if path_filter is not None:
            args += ["--path-filter", path_filter]
        env = self.embedding_env(base_url, model) if base_url else None
        proc = self._checked(self.run(args, cwd=project, env=env, timeout=timeout), "chunkhound search")
        return parse_search_output(proc.stdout)

    @contextlib.contextmanager
    def hold_write_lock(self, db_path: Path, timeout: float = 60) -> Iterator[subprocess.Popen[str]]:
        """Keep ``db_path`` open read-write in another process, as a running ChunkHound writer does.

        DuckDB's lock is per process, so the holder must be a separate process; it uses the venv's duckdb
        1.5.4 so the file is not touched by a newer DuckDB. Yields once the lock is held; kills it on exit.
        """
        code = (
            "import duckdb, sys\n"
            "con = duckdb.connect(sys.argv[1])\n"
            "con.execute('SELECT 1').fetchall()\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"
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
            deadline = time.monotonic() + timeout
            line = proc.stdout.readline()
            if line.strip() != "locked" or time.monotonic() > deadline:
                err = proc.stderr.read() if proc.stderr else ""
                raise ChunkHoundError(f"lock holder did not start: {line!r} {err}")
            yield proc
        finally:
            if proc.stdin:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- parsing -----------------------------------------------------------------------------------------------

# Filled in from the real output (see /tmp/notes/chunkhound.md).
_HIT_HEADER = re.compile(r"^\s*\[(?P<n>\d+)\]\s+(?P<path>.+?)\s*$")


def parse_search_output(stdout: str) -> list[Hit]:
    """Parse ``chunkhound search`` text output into hits."""
    raise NotImplementedError(stdout[:200])


# -- building ----------------------------------------------------------------------------------------------


def _python_ok(version: tuple[int, int]) -> bool:
    return _PYTHON_MIN <= version < _PYTHON_MAX_EXCLUSIVE


def _pick_python() -> str:
    """The interpreter to build the venv from: this one if ChunkHound supports it, else python3.11/python3."""
    if _python_ok(sys.version_info[:2]):
        return sys.executable
    for name in ("python3.11", "python3.12", "python3"):
        path = shutil.which(name)
        if not path:
            continue
        out = subprocess.run(
            [path, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True, text=True, check=False,
        )
        if out.returncode == 0:
            major, minor = (int(x) for x in out.stdout.split())
            if _python_ok((major, minor)):
                return path
    raise ChunkHoundError("no Python >=3.10,<3.15 found for ChunkHound 6.1.0")


def _step(cmd: list[str], *, env: Mapping[str, str] | None = None, what: str) -> str:
    """Run one build step, streaming nothing but reporting its time; raise with its output on failure."""
    _log(f"{what} ...")
    started = time.monotonic()
    proc = subprocess.run(
        cmd, env=dict(env) if env is not None else None, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, check=False,
    )
    if proc.returncode != 0:
        raise ChunkHoundError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        )
    _log(f"{what}: done in {time.monotonic() - started:.0f}s")
    return proc.stdout


def _build(root: Path) -> ChunkHoundEnv:
    """Build the environment from scratch in ``root`` (which must not exist)."""
    started = time.monotonic()
    venv, home = root / "venv", root / "home"
    home.mkdir(parents=True)
    python = _pick_python()
    _step([python, "-m", "venv", str(venv)], what=f"creating venv with {python}")
    vpy = str(venv / "bin" / "python")
    pip_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    _step([vpy, "-m", "pip", "install", "--no-input", f"chunkhound=={CHUNKHOUND_VERSION}"], env=pip_env,
          what=f"pip install chunkhound=={CHUNKHOUND_VERSION} (about 3 minutes)")
    duckdb_version = _step([vpy, "-c", "import duckdb; print(duckdb.__version__)"],
                           what="reading the installed duckdb version").strip()
    try:
        _step([vpy, "-m", "pip", "install", "--no-input", "--no-deps",
               f"duckdb-extension-vss=={duckdb_version}"], env=pip_env,
              what=f"pip install duckdb-extension-vss=={duckdb_version}")
    except ChunkHoundError as exc:
        raise ChunkHoundError(
            f"ChunkHound {CHUNKHOUND_VERSION} installed duckdb {duckdb_version}, but the registry has no "
            f"duckdb-extension-vss=={duckdb_version}: without that extension file ChunkHound cannot run offline "
            f"(it runs INSTALL vss on every connection).\n{exc}"
        ) from exc
    site = _step([vpy, "-c", "import duckdb_extension_vss, os; print(os.path.dirname(duckdb_extension_vss.__file__))"],
                 what="locating the vss wheel").strip()
    candidates = sorted(Path(site).glob(f"extensions/v{duckdb_version}/*/vss.duckdb_extension")) + sorted(
        Path(site).glob(f"extensions/v{duckdb_version}/vss.duckdb_extension")
    )
    if not candidates:
        found = [str(p.relative_to(site)) for p in Path(site).rglob("*.duckdb_extension")]
        raise ChunkHoundError(f"no vss.duckdb_extension for v{duckdb_version} in {site}: found {found}")
    ext_file = candidates[0]
    home_env = {**pip_env, "HOME": str(home)}
    install = (
        "import duckdb, sys\n"
        "con = duckdb.connect()\n"
        "con.execute(\"INSTALL '\" + sys.argv[1].replace(\"'\", \"''\") + \"'\")\n"
        "con.execute('LOAD vss')\n"
        "print(con.execute(\"SELECT install_path FROM duckdb_extensions() WHERE extension_name='vss'\")"
        ".fetchone()[0])\n"
    )
    installed_at = _step([vpy, "-c", install, str(ext_file)], env=home_env,
                         what="installing the vss extension into the private HOME").strip()
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
    env = ChunkHoundEnv(root=root, venv=root / "venv", home=root / "home", duckdb_version=marker["duckdb"])
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
        _log(f"waiting for the build lock {lock_path}")
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
                # Leave no half-built tree behind to confuse the next caller (it would be rebuilt anyway).
                shutil.rmtree(root, ignore_errors=True)
                raise
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def temp_copy(db_file: Path) -> Path:
    """Copy a DB file into a fresh temp dir, so tests can open it while ChunkHound may still hold the original."""
    dest = Path(tempfile.mkdtemp(prefix="chunkhound-db-")) / db_file.name
    shutil.copy2(db_file, dest)
    return dest


if __name__ == "__main__":
    ensure_chunkhound()
