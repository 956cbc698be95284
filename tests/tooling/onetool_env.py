"""Drive the real onetool-mcp 2.2.2 as an MCP stdio server, with our pack loaded, from a pytest test.

Why this exists: the pack's contract is what an agent sees through OneTool (wrapped text, handles for large
results, keyword abbreviations, secrets and ``tools:`` config), and only the real server shows that. OneTool
needs Python >= 3.12 and its own dependency set, while the test process may be the 3.11 dev venv, so:

* ``ensure_onetool(repo_root)`` builds (once, cached, file-locked) a Python 3.12 virtual environment at
  ``~/.cache/onetool-code/onetool-2.2.2/venv`` with ``onetool-mcp==2.2.2``, the ``mcp`` client and our
  runtime dependencies, then points it at the working tree of ``repo_root`` (no copy, no build).
* ``OneToolEnv.serve(...)`` writes ``onetool.yaml``/``secrets.yaml`` and starts a small driver script
  under the venv's Python. The driver owns an ``mcp`` ``ClientSession`` connected to
  ``onetool --config ... --secrets ...`` and speaks JSON lines with this process, so the test never
  imports ``mcp`` itself. Every request is bounded by a timeout on both sides.
* ``OneToolEnv.direct_run(...)`` runs ``onetool direct run --no-host`` (same execution pipeline, no MCP,
  about as slow to start as the server but needs no session).

Run this file directly to pre-warm the cached venv (CI does it before the test session); with ``--python312`` it
prints the Python 3.12 it would build the venv with, or says on stderr why none was found (``scripts/test.sh``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ONETOOL_VERSION = "2.2.2"
ONETOOL_REQUIREMENT = f"onetool-mcp=={ONETOOL_VERSION}"
# Unpinned on purpose: onetool-mcp itself requires ``mcp>=1.26``, so resolving both in one pip call picks
# exactly the client version that the server was installed with (1.30.0 when measured).
MCP_REQUIREMENT = "mcp"

#: Root of the cache; ``ONETOOL_CODE_CACHE_DIR`` moves it (e.g. to a CI cache volume).
CACHE_ROOT = Path(os.environ.get("ONETOOL_CODE_CACHE_DIR", "~/.cache/onetool-code")).expanduser()
BUILD_DIR = CACHE_ROOT / f"onetool-{ONETOOL_VERSION}"
VENV_DIR = BUILD_DIR / "venv"
MARKER_NAME = ".onetool-code-complete.json"
# Installing onetool-mcp plus our dependencies took ~35 s with a warm pip cache; allow a cold one.
PIP_TIMEOUT = 1200.0
# What a real MCP client (mcp.client.stdio.get_default_environment) passes to a server it starts; we use
# the same minimal environment for ``direct_run`` so both paths see the same variables.
_INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")


class OneToolError(RuntimeError):
    """OneTool could not be installed, started or talked to."""


class OneToolUnavailableError(OneToolError):
    """No Python 3.12 interpreter (or no installable OneTool): a conftest may turn this into a skip."""


class OneToolTimeoutError(OneToolError, TimeoutError):
    """A request did not answer in time. The server is killed then: a hung pack call blocks it for good."""


# --------------------------------------------------------------------------------------------------------------
# Building the cached venv
# --------------------------------------------------------------------------------------------------------------


def _probe_python(python: str | Path) -> tuple[Path, tuple[int, int, int]] | None:
    """Return the interpreter's real path and version, or None when it does not run.

    Why: ``shutil.which("python3.12")`` often finds a pyenv shim that exits 127 when 3.12 is not the
    selected pyenv version, so a candidate counts only if it actually runs; the real path (not the shim)
    is what the venv and the marker hash must name.
    """
    try:
        proc = subprocess.run(
            [str(python), "-c", "import sys; print(sys.executable); print(*sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != 2:
        return None
    try:
        major, minor, micro = (int(x) for x in lines[1].split())
    except ValueError:
        return None
    return Path(lines[0]), (major, minor, micro)


def _find_python312() -> tuple[Path, tuple[int, int, int]]:
    candidates: list[Path] = []
    if found := shutil.which("python3.12"):
        candidates.append(Path(found))
    pyenv_root = Path(os.environ.get("PYENV_ROOT", "~/.pyenv")).expanduser()
    candidates.extend(sorted(pyenv_root.glob("versions/3.12*/bin/python3.12"), reverse=True))
    candidates.extend(Path(p) for p in ("/usr/bin/python3.12", "/usr/local/bin/python3.12"))
    for candidate in candidates:
        probed = _probe_python(candidate)
        if probed is not None and probed[1][:2] == (3, 12):
            return probed
    tried = ", ".join(str(c) for c in candidates) or "none"
    raise OneToolUnavailableError(
        "onetool-mcp 2.2.2 needs Python 3.12, and no working python3.12 was found "
        f"(tried: {tried}). Install one (e.g. `pyenv install 3.12`) or put it on PATH."
    )


def find_python312() -> Path:
    """Find a working Python 3.12 interpreter (OneTool 2.2.2 refuses older ones; pip rejects 3.11)."""
    return _find_python312()[0]


def read_runtime_dependencies(repo_root: Path) -> list[str]:
    """Our ``[project].dependencies``: the venv must hold them so the pack imports as in production."""
    with (repo_root / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    return [str(dep) for dep in project.get("dependencies", [])]


def _project_metadata(repo_root: Path) -> tuple[str, str]:
    with (repo_root / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    return str(project["name"]), str(project.get("version", "0"))


def _spec_hash(python: Path, python_version: tuple[int, int, int], deps: list[str]) -> str:
    """Hash everything the venv's content depends on, so changing any of it rebuilds the venv."""
    spec = {
        "onetool": ONETOOL_REQUIREMENT,
        "mcp": MCP_REQUIREMENT,
        "deps": deps,
        "python": str(python),
        "python_version": list(python_version),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive fcntl lock: parallel pytest workers or CI steps must not build the venv twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_marker(venv: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((venv / MARKER_NAME).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _build_venv(venv: Path, python: Path, deps: list[str], spec_hash: str, log_path: Path) -> dict[str, Any]:
    """Create the venv from scratch; on any failure remove it so no half-built venv is ever reused."""
    if venv.exists():
        shutil.rmtree(venv)
    started = time.monotonic()
    try:
        with log_path.open("w") as log:
            subprocess.run(
                [str(python), "-m", "venv", str(venv)],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=300,
            )
            # One resolver run for everything, so our pins and OneTool's are checked against each other.
            subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    ONETOOL_REQUIREMENT,
                    MCP_REQUIREMENT,
                    *deps,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=PIP_TIMEOUT,
            )
        purelib = subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(venv, ignore_errors=True)
        tail = ""
        with contextlib.suppress(OSError):
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise OneToolUnavailableError(
            f"building the OneTool venv at {venv} failed: {exc}\n--- {log_path} (tail) ---\n{tail}"
        ) from exc
    marker = {
        "hash": spec_hash,
        "deps": deps,
        "python": str(python),
        "site_packages": purelib,
        "install_seconds": round(time.monotonic() - started, 1),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tmp = venv / f"{MARKER_NAME}.tmp"
    tmp.write_text(json.dumps(marker, indent=2))
    tmp.replace(venv / MARKER_NAME)  # atomic: the marker is either absent or complete
    return marker


# Our package goes into the venv as a ``.pth`` file naming an overlay directory that holds a symlink
# ``onetool_code -> <repo_root>/onetool_code`` plus a minimal ``*.dist-info``. Why not pip:
# * ``pip install --no-deps --no-build-isolation <repo_root>`` took 1.6 s per call (measured), needs setuptools
#   in the 3.12 venv (a 3.12 venv has only pip), leaves ``build/`` and ``*.egg-info`` in the working tree and
#   snapshots it; ``pip install -e`` took 2.1 s with the same litter.
# * the overlay takes ~1 ms, is always the live working tree, and exposes only ``onetool_code`` (a ``.pth``
#   naming repo_root itself would also make ``tests``, ``bench``, ``scripts`` importable inside OneTool).
# The dist-info keeps ``importlib.metadata.version("onetool-code")`` working. No console script is made: the
# CLI is tested from the dev venv. One cached venv serves one working tree at a time (last caller wins).
_OVERLAY_NAME = "onetool-code-worktree"
_PTH_NAME = "onetool_code_worktree.pth"


def _link_worktree(venv: Path, site_packages: Path, repo_root: Path) -> None:
    overlay = venv / _OVERLAY_NAME
    overlay.mkdir(exist_ok=True)
    link = overlay / "onetool_code"
    target = (repo_root / "onetool_code").resolve()
    if not target.is_dir():
        raise OneToolError(f"{target} is not a directory: is {repo_root} the onetool-code repository?")
    if not (link.is_symlink() and link.readlink() == target):
        tmp = overlay / f".onetool_code.{os.getpid()}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(target, target_is_directory=True)
        tmp.replace(link)
    name, version = _project_metadata(repo_root)
    for old in overlay.glob("*.dist-info"):
        if old.name != f"{name.replace('-', '_')}-{version}.dist-info":
            shutil.rmtree(old)
    dist_info = overlay / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir(exist_ok=True)
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if not (dist_info / "METADATA").is_file() or (dist_info / "METADATA").read_text() != metadata:
        (dist_info / "METADATA").write_text(metadata)
    pth = site_packages / _PTH_NAME
    if not pth.is_file() or pth.read_text() != f"{overlay}\n":
        pth.write_text(f"{overlay}\n")


def ensure_onetool(repo_root: Path) -> OneToolEnv:
    """Return a ready OneTool venv that imports ``onetool_code`` from ``repo_root``'s working tree.

    The first call (or the first after ``[project].dependencies`` changed) builds the venv, ~35-60 s;
    later calls take a few tens of milliseconds (interpreter probe plus the lock).
    """
    repo_root = Path(repo_root).resolve()
    python, python_version = _find_python312()
    deps = read_runtime_dependencies(repo_root)
    spec_hash = _spec_hash(python, python_version, deps)
    built_now = False
    with _locked(BUILD_DIR / ".lock"):
        marker = _read_marker(VENV_DIR)
        if marker is None or marker.get("hash") != spec_hash or not (VENV_DIR / "bin" / "onetool").exists():
            marker = _build_venv(VENV_DIR, python, deps, spec_hash, BUILD_DIR / "install.log")
            built_now = True
        site_packages = Path(marker["site_packages"])
        _link_worktree(VENV_DIR, site_packages, repo_root)
        driver = BUILD_DIR / "mcp_driver.py"
        if not driver.is_file() or driver.read_text() != _DRIVER_SOURCE:
            tmp = driver.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(_DRIVER_SOURCE)
            tmp.replace(driver)
    return OneToolEnv(
        venv=VENV_DIR,
        repo_root=repo_root,
        site_packages=site_packages,
        driver=driver,
        install_seconds=float(marker.get("install_seconds", 0.0)),
        built_now=built_now,
    )


# --------------------------------------------------------------------------------------------------------------
# Config files
# --------------------------------------------------------------------------------------------------------------


def write_config(
    config_dir: Path,
    *,
    tools_dir: Sequence[Path | str],
    secrets: Mapping[str, str] | None = None,
    tool_config: Mapping[str, Any] | None = None,
    pack_name: str = "code",
    extra_config: Mapping[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Write ``onetool.yaml`` and ``secrets.yaml`` into ``config_dir``; return both paths.

    Schema facts (OneTool 2.2.2, root model forbids unknown keys): ``tools_dir`` is a list of globs
    (absolute, or relative to the config file's folder); pack settings live under ``tools: {<pack>: {...}}``;
    ``log_level`` (DEBUG/INFO/WARNING/ERROR) and ``log_dir`` (default ``logs``, relative to the config
    folder) are top-level. ``extra_config`` is merged at top level for anything else (``output``, ``log_level``).
    Telemetry is off so tests never try to phone home.
    """
    config_dir = Path(config_dir)
    config_dir.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "tools_dir": [str(Path(p)) for p in tools_dir],
        "telemetry": {"enabled": False},
    }
    if tool_config is not None:
        config["tools"] = {pack_name: dict(tool_config)}
    for key, value in (extra_config or {}).items():
        if key == "tools" and isinstance(value, Mapping) and "tools" in config:
            config["tools"] = {**config["tools"], **value}
        else:
            config[key] = value
    # Written as JSON, which YAML parses as is: no PyYAML needed here, so the pre-warm script runs on a bare
    # interpreter, and no YAML quoting pitfalls for values like "${VAR}", "no", or "1e3".
    config_path = config_dir / "onetool.yaml"
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    secrets_path = config_dir / "secrets.yaml"
    secrets_path.write_text(json.dumps(dict(secrets or {}), indent=2) + "\n")
    return config_path, secrets_path


def _server_environment(env: Mapping[str, str] | None) -> dict[str, str]:
    """The minimal environment an MCP client gives a server, plus the test's own variables."""
    base = {k: os.environ[k] for k in _INHERITED_ENV if k in os.environ}
    base.update(env or {})
    return base


def _driver_environment() -> dict[str, str]:
    """The driver runs under the 3.12 venv: drop variables that would point it at the 3.11 test venv."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH", "__PYVENV_LAUNCHER__"}
    out = {k: v for k, v in os.environ.items() if k not in drop}
    out["PYTHONUNBUFFERED"] = "1"
    return out


# --------------------------------------------------------------------------------------------------------------
# The environment handle
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectResult:
    """Outcome of ``onetool direct run``: stdout is the formatted result, stderr carries pack log warnings."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float


@dataclass(frozen=True)
class OneToolEnv:
    """A built OneTool venv bound to one working tree."""

    venv: Path
    repo_root: Path
    site_packages: Path
    driver: Path
    install_seconds: float
    built_now: bool

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def onetool(self) -> Path:
        return self.venv / "bin" / "onetool"

    def write_config(self, config_dir: Path, **kwargs: Any) -> tuple[Path, Path]:
        """Same as the module-level ``write_config``; here so a test needs only the env handle."""
        return write_config(config_dir, **kwargs)

    @contextlib.contextmanager
    def serve(
        self,
        config_dir: Path,
        *,
        tools_dir: Sequence[Path | str],
        secrets: Mapping[str, str] | None = None,
        tool_config: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        pack_name: str = "code",
        extra_config: Mapping[str, Any] | None = None,
        cwd: Path | None = None,
        startup_timeout: float = 90.0,
    ) -> Iterator[OneToolClient]:
        """Start ``onetool`` as an MCP stdio server and yield a connected client; stop it on exit.

        The server gets only the variables a real MCP client passes (HOME, PATH, ...) plus ``env``, so
        ``OT_CWD`` and friends must be given explicitly, as a user's MCP client config would.
        ``cwd`` defaults to ``config_dir``.
        """
        config_path, secrets_path = write_config(
            config_dir,
            tools_dir=tools_dir,
            secrets=secrets,
            tool_config=tool_config,
            pack_name=pack_name,
            extra_config=extra_config,
        )
        spec = {
            "command": str(self.onetool),
            "args": ["--config", str(config_path), "--secrets", str(secrets_path)],
            "env": _server_environment(env),
            "cwd": str(cwd or config_dir),
            "startup_timeout": startup_timeout,
        }
        log_dir = Path(str((extra_config or {}).get("log_dir", "logs"))).expanduser()
        log_path = (log_dir if log_dir.is_absolute() else Path(config_dir) / log_dir) / "serve.log"
        client = OneToolClient._start(self, Path(config_dir), spec, startup_timeout, log_path)
        try:
            yield client
        finally:
            client.close()

    def direct_run(
        self,
        config_dir: Path,
        command: str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        fmt: str | None = None,
        timeout: float = 120.0,
    ) -> DirectResult:
        """Run one command through ``onetool direct run --no-host`` with the config already in ``config_dir``.

        Same executor as the server (allowlist, keyword prefixes, error texts) but no MCP wrapping: no
        external-content markers, dicts pretty-printed (``json_h``), exit code 1 on an execution error, no
        log file (standard logging's last-resort handler prints WARNING+ records to stderr).
        """
        config_dir = Path(config_dir)
        args = [str(self.onetool), "direct", "run", "--no-host", "-c", str(config_dir / "onetool.yaml")]
        if (config_dir / "secrets.yaml").is_file():
            args += ["-s", str(config_dir / "secrets.yaml")]
        if fmt:
            args += ["--format", fmt]
        args.append(command)
        started = time.monotonic()
        try:
            proc = subprocess.run(
                args,
                capture_output=True,
                text=True,
                env=_server_environment(env),
                cwd=str(cwd or config_dir),
                timeout=timeout,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as exc:
            raise OneToolTimeoutError(f"onetool direct run {command!r} took over {timeout} s") from exc
        return DirectResult(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


# --------------------------------------------------------------------------------------------------------------
# The MCP client (this side of the JSON-lines bridge)
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolResult:
    """A ``tools/call`` result as the agent receives it.

    ``text`` joins the text content items with newlines: for OneTool that is the single wrapped item,
    ``/* <external-content-XXXX> */`` ... ``/* </external-content-XXXX> */`` included. ``body`` strips
    those markers for assertions on the pack's own output.
    """

    text: str
    content: list[dict[str, Any]]
    is_error: bool
    structured: Any
    seconds: float
    raw: dict[str, Any] = field(repr=False)

    @property
    def body(self) -> str:
        return unwrap_external_content(self.text)


def unwrap_external_content(text: str) -> str:
    """Strip OneTool's ``/* <external-content-ID> */`` wrapper (first and last line) if present."""
    lines = text.split("\n")
    if (
        len(lines) >= 2
        and lines[0].startswith("/* <external-content-")
        and lines[-1].startswith("/* </external-content-")
    ):
        return "\n".join(lines[1:-1])
    return text


def _descendants(pid: int) -> list[int]:
    """All live descendants of ``pid`` (Linux /proc): the server runs in its own session, so killing the
    driver's process group would not reach it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        with contextlib.suppress(ValueError, IndexError):
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


class OneToolClient:
    """Talks to the driver process; every method is bounded by a timeout and never hangs the test."""

    def __init__(
        self,
        env: OneToolEnv,
        config_dir: Path,
        proc: subprocess.Popen[bytes],
        stderr_path: Path,
        log_path: Path,
    ):
        self.env = env
        self.config_dir = config_dir
        self.stderr_path = stderr_path
        #: OneTool's own log (loguru): ``<config dir>/<log_dir>/serve.log``, by default ``logs/serve.log``.
        self.log_path = log_path
        self._proc = proc
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        self._closed = False
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self.startup_seconds = 0.0
        self._pump_thread = threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True)
        self._pump_thread.start()

    @classmethod
    def _start(
        cls, env: OneToolEnv, config_dir: Path, spec: dict[str, Any], timeout: float, log_path: Path
    ) -> OneToolClient:
        stderr_path = config_dir / "mcp-stderr.log"
        spec = {**spec, "errlog": str(stderr_path)}
        with stderr_path.open("ab") as err:
            proc = subprocess.Popen(
                [str(env.python), str(env.driver), json.dumps(spec)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=_driver_environment(),
                start_new_session=True,
            )
        client = cls(env, config_dir, proc, stderr_path, log_path)
        try:
            hello = client._receive(0, timeout + 15)
        except BaseException:
            client._kill()
            raise
        client.server_info = hello.get("serverInfo", {})
        client.instructions = hello.get("instructions")
        client.startup_seconds = float(hello.get("seconds", 0.0))
        return client

    # -- plumbing -----------------------------------------------------------------------------------------

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._lines.put(line)
        self._lines.put(None)

    def _stderr_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def _receive(self, want_id: int, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                self._kill()
                raise OneToolTimeoutError(
                    f"no answer from the OneTool driver within {timeout:.0f} s (killed it)\n"
                    f"--- {self.stderr_path} (tail) ---\n{self._stderr_tail()}"
                ) from None
            if line is None:
                self._closed = True
                raise OneToolError(
                    f"the OneTool driver exited (code {self._proc.poll()})\n"
                    f"--- {self.stderr_path} (tail) ---\n{self._stderr_tail()}"
                )
            try:
                message = json.loads(line)
            except ValueError:
                continue  # not ours: the driver keeps stdout clean, but never trust it blindly
            if message.get("id") != want_id:
                continue  # a late answer to a request we already gave up on
            if not message.get("ok"):
                error = str(message.get("error"))
                if message.get("timeout"):
                    # A pack call runs on the server's event loop: until it returns, the server answers
                    # nothing else (measured: the next call waited out its own timeout too). Kill it so
                    # later calls fail fast instead of queueing behind the hung one.
                    self._kill()
                    raise OneToolTimeoutError(f"{error}; the server was killed")
                raise OneToolError(f"{error}\n--- {self.stderr_path} (tail) ---\n{self._stderr_tail()}")
            return message.get("result")

    def request(self, op: str, timeout: float = 60.0, **params: Any) -> Any:
        """Send one operation to the driver and wait for its answer (``timeout`` is enforced by both sides)."""
        if self._closed:
            raise OneToolError("the OneTool client is closed")
        self._next_id += 1
        message = {"id": self._next_id, "op": op, "timeout": timeout, **params}
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
        except OSError as exc:
            self._closed = True
            raise OneToolError(f"the OneTool driver is gone: {exc}\n{self._stderr_tail()}") from exc
        return self._receive(self._next_id, timeout + 10)

    def _kill(self) -> None:
        self._closed = True
        pids = _descendants(self._proc.pid)
        for pid in [self._proc.pid, *pids]:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        self._release()

    def _release(self) -> None:
        """Close our pipe ends: pytest runs with warnings as errors, and a leaked pipe is a ResourceWarning."""
        for stream in (self._proc.stdin,):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        self._pump_thread.join(timeout=5)  # EOF once the driver is gone; never close under a reader
        if not self._pump_thread.is_alive() and self._proc.stdout is not None:
            self._proc.stdout.close()

    # -- MCP operations -----------------------------------------------------------------------------------

    def list_tools(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """``tools/list``: dicts with ``name``, ``description``, ``inputSchema``... (MCP field names)."""
        return list(self.request("list_tools", timeout)["tools"])

    def call_tool(self, name: str, arguments: Mapping[str, Any], timeout: float = 60.0) -> ToolResult:
        """``tools/call`` on any tool the server lists."""
        started = time.monotonic()
        raw = self.request("call_tool", timeout, name=name, arguments=dict(arguments))
        content = list(raw.get("content") or [])
        text = "\n".join(str(item.get("text", "")) for item in content if item.get("type") == "text")
        return ToolResult(
            text=text,
            content=content,
            is_error=bool(raw.get("isError")),
            structured=raw.get("structuredContent"),
            seconds=time.monotonic() - started,
            raw=raw,
        )

    def run(self, command: str, timeout: float = 60.0) -> ToolResult:
        """Call OneTool's single ``run`` tool, exactly as an agent does."""
        return self.call_tool("run", {"command": command}, timeout)

    def list_resources(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        return list(self.request("list_resources", timeout)["resources"])

    def read_resource(self, uri: str, timeout: float = 30.0) -> dict[str, Any]:
        return dict(self.request("read_resource", timeout, uri=uri))

    def list_prompts(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        return list(self.request("list_prompts", timeout)["prompts"])

    # -- logs and shutdown --------------------------------------------------------------------------------

    def log_text(self) -> str:
        """The log so far ("" before the first record); loguru writes each record through, no flush needed."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def close(self, timeout: float = 20.0) -> None:
        """Ask the driver to end the MCP session (stdin close, then SIGTERM/SIGKILL by mcp); kill on delay."""
        if self._closed or self._proc.poll() is not None:
            self._closed = True
            if self._proc.poll() is None:
                self._kill()
            else:
                self._release()
            return
        self._closed = True
        # Taken now: once the driver exits, the server is re-parented and no longer found as its child.
        server_pids = _descendants(self._proc.pid)
        stdin = self._proc.stdin
        with contextlib.suppress(OSError):
            if stdin is not None:
                stdin.write(b'{"id": -1, "op": "close"}\n')
                stdin.flush()
                stdin.close()
        try:
            self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            server_pids += _descendants(self._proc.pid)
        # A server that outlived its driver would keep the log and ports busy: make sure it is gone.
        for pid in server_pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self._release()


# --------------------------------------------------------------------------------------------------------------
# The driver: runs under the venv's Python 3.12, owns the mcp ClientSession, speaks JSON lines on stdin/stdout.
# Kept as a string (written next to the venv) so this module stays importable on 3.11 without ``mcp``.
# --------------------------------------------------------------------------------------------------------------

_DRIVER_SOURCE = r'''
"""JSON-lines bridge between a test process and an MCP stdio server (written by tests/tooling/onetool_env.py)."""

import asyncio
import json
import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from pydantic import AnyUrl

# Keep a private handle on the real stdout for the protocol, and send anything else printed to stderr.
_proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)


def emit(message):
    _proto.write(json.dumps(message) + "\n")
    _proto.flush()


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def handle(session, msg):
    op = msg["op"]
    if op == "list_tools":
        return dump(await session.list_tools())
    if op == "call_tool":
        return dump(await session.call_tool(msg["name"], msg.get("arguments") or {}))
    if op == "list_resources":
        return dump(await session.list_resources())
    if op == "read_resource":
        return dump(await session.read_resource(AnyUrl(msg["uri"])))
    if op == "list_prompts":
        return dump(await session.list_prompts())
    if op == "ping":
        return dump(await session.send_ping())
    raise ValueError(f"unknown op {op!r}")


async def main():
    spec = json.loads(sys.argv[1])
    params = StdioServerParameters(command=spec["command"], args=spec["args"], env=spec["env"], cwd=spec["cwd"])
    with open(spec["errlog"], "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                started = time.monotonic()
                try:
                    init = await asyncio.wait_for(session.initialize(), spec["startup_timeout"])
                except Exception as exc:
                    emit({"id": 0, "ok": False, "timeout": isinstance(exc, TimeoutError),
                          "error": f"initialize failed: {type(exc).__name__}: {exc}"})
                    return
                emit({"id": 0, "ok": True, "result": {
                    "serverInfo": dump(init.serverInfo),
                    "instructions": init.instructions,
                    "protocolVersion": init.protocolVersion,
                    "seconds": time.monotonic() - started,
                }})
                while True:
                    line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
                    if not line:
                        return
                    msg = json.loads(line)
                    if msg.get("op") == "close":
                        return
                    timeout = float(msg.get("timeout") or 60)
                    try:
                        result = await asyncio.wait_for(handle(session, msg), timeout)
                    except TimeoutError:
                        emit({"id": msg["id"], "ok": False, "timeout": True,
                              "error": f"{msg['op']} timed out after {timeout} s"})
                    except Exception as exc:
                        emit({"id": msg["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}"})
                    else:
                        emit({"id": msg["id"], "ok": True, "result": result})


asyncio.run(main())
'''


if __name__ == "__main__":
    if sys.argv[1:] == ["--python312"]:
        # scripts/test.sh's Python 3.12 stage takes the interpreter this venv is built with: one search, not two.
        try:
            print(find_python312())
        except OneToolUnavailableError as exc:
            print(exc, file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
    _root = Path(__file__).resolve().parents[2]
    _started = time.monotonic()
    _env = ensure_onetool(_root)
    _state = f"built in {_env.install_seconds:.0f} s" if _env.built_now else "already built"
    print(f"OneTool {ONETOOL_VERSION} venv ready at {_env.venv} ({_state}; {time.monotonic() - _started:.1f} s)")
    sys.exit(0)
