"""The one place that reads the outside world: paths, env vars, ``.chunkhound.json``, ``secrets.yaml``, OneTool.

Everything is resolved once per call into a frozen ``Settings`` that is passed down; no other module reads
``os.environ`` or a config file. The API key never leaves here readable: ``Secret`` masks its repr.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from onetool_code import schema
from onetool_code.errors import BadInputError, OneToolCodeError

DEFAULT_PROVIDER = "openai"
DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_LIMIT = 10
DEFAULT_MAX_BYTES = 5000
DEFAULT_TIMEOUT = 30.0
MAX_RETRIES = 2
SECRETS_ENV = "ONETOOL_CODE_SECRETS"
KEY_NAME = "OPENAI_API_KEY"


class Secret(str):
    """A string whose repr never shows its value, so a key cannot leak through a log or a traceback."""

    def __repr__(self) -> str:
        return "Secret('***')"


@dataclass(frozen=True)
class OneToolHost:
    """What OneTool hands a pack: its secret lookup and the ``tools: {code: ...}`` settings."""

    get_secret: Callable[[str], str | None]
    tool_config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    project_root: Path
    db_path: Path
    provider: str
    model: str
    base_url: str | None
    api_key: Secret | None = field(repr=False)
    key_source: str
    limit: int = DEFAULT_LIMIT
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT
    cache: bool = True


def onetool_host() -> OneToolHost | None:
    """OneTool's secret lookup and ``tools: {code: ...}`` settings inside its server; None anywhere else.

    ``import ot`` succeeds wherever onetool-mcp is installed, so presence is not enough: ``get_config()``
    raises RuntimeError ("No config loaded") outside a running OneTool (measured on 2.2.2).
    """
    try:
        from ot.config import get_config, get_secret, get_tool_config
    except ImportError:
        return None
    try:
        get_config()
    except RuntimeError:
        return None
    # Without a schema OneTool returns the raw mapping, so a bad value reaches our validation (with a
    # pydantic schema it would silently fall back to defaults).
    config = get_tool_config("code")
    return OneToolHost(get_secret=get_secret, tool_config=dict(config) if isinstance(config, Mapping) else {})


def resolve(
    *,
    path: str | None = None,
    db: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    cache: bool | None = None,
    host: OneToolHost | None = None,
) -> Settings:
    """Resolve every setting for one call; explicit arguments win over everything else."""
    tool = dict(host.tool_config) if host else {}
    root = project_root(path)
    project = chunkhound_config(root)
    embedding = project.get("embedding") if isinstance(project.get("embedding"), dict) else {}
    key, key_source = api_key(root, embedding, host)
    return Settings(
        project_root=root,
        db_path=index_path(root, db if db is not None else tool.get("db"), project),
        provider=_embedding_setting("provider", provider, tool, embedding) or DEFAULT_PROVIDER,
        model=_embedding_setting("model", model, tool, embedding) or DEFAULT_MODEL,
        base_url=_embedding_setting("base_url", base_url, tool, embedding),
        api_key=key,
        key_source=key_source,
        limit=_int_setting(tool, "limit", DEFAULT_LIMIT, 1, 100),
        max_bytes=_int_setting(tool, "max_bytes", DEFAULT_MAX_BYTES, 500, 1_000_000),
        timeout=float(_int_setting(tool, "timeout", int(DEFAULT_TIMEOUT), 1, 600)),
        cache=cache if cache is not None else bool(tool.get("cache", True)),
    )


def project_root(path: str | None) -> Path:
    """The project directory.

    Precedence: ``path`` (``~`` expanded; relative paths against ``OT_CWD``, else the current directory),
    then ``OT_CWD``, then the current directory.
    """
    base = Path(os.environ.get("OT_CWD") or Path.cwd()).expanduser()
    if path is None or not str(path).strip():
        root = base
    else:
        candidate = Path(str(path).strip()).expanduser()
        root = candidate if candidate.is_absolute() else base / candidate
    root = root.resolve()
    if not root.exists():
        raise BadInputError(f"Project path does not exist: {root}")
    if not root.is_dir():
        raise BadInputError(f"Project path is not a directory: {root}")
    return root


def chunkhound_config(root: Path) -> dict[str, Any]:
    """The project's ``.chunkhound.json`` as a dict ({} when absent)."""
    config_file = root / ".chunkhound.json"
    if not config_file.is_file():
        return {}
    try:
        data = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OneToolCodeError(f"Cannot read {config_file}: {exc}") from exc
    if not isinstance(data, dict):
        raise OneToolCodeError(f"Cannot read {config_file}: expected a JSON object")
    return data


def index_path(root: Path, db: str | None, project: Mapping[str, Any]) -> Path:
    """Where the index file is (it may not exist).

    Precedence: ``db`` (relative to the project root, absolute allowed), then ChunkHound's own resolution:
    ``.chunkhound.json`` ``database.path``, ``CHUNKHOUND_DATABASE__PATH`` (legacy ``CHUNKHOUND_DB_PATH``),
    ``.chunkhound/db/chunks.db``; when none of those exists, the legacy file ``.chunkhound/db`` and then
    OneTool's old ``.chunkhound/chunks.db`` are tried before settling on ChunkHound's default.
    """
    if db is not None and str(db).strip():
        return _database_file(root, str(db).strip())
    database = project.get("database")
    configured = database.get("path") if isinstance(database, dict) else None
    configured = configured or os.environ.get("CHUNKHOUND_DATABASE__PATH") or os.environ.get("CHUNKHOUND_DB_PATH")
    if configured:
        return _database_file(root, str(configured))
    default = root / ".chunkhound" / "db" / schema.DB_FILE_NAME
    for candidate in (default, root / ".chunkhound" / "db", root / ".chunkhound" / schema.DB_FILE_NAME):
        if candidate.is_file():
            return candidate
    return default


def _database_file(root: Path, value: str) -> Path:
    """ChunkHound's rule: a path names a directory holding ``chunks.db`` unless it ends in ``.db`` or
    ``.duckdb`` or is an existing regular file."""
    target = Path(value).expanduser()
    target = target if target.is_absolute() else root / target
    if target.is_file() or target.suffix in {".db", ".duckdb"}:
        return target
    return target / schema.DB_FILE_NAME


def _embedding_setting(
    name: str, explicit: str | None, tool: Mapping[str, Any], embedding: Mapping[str, Any]
) -> str | None:
    """One embedding setting.

    Precedence: the explicit argument, OneTool's ``tools: {code: {name}}``, the project's
    ``.chunkhound.json`` ``embedding.{name}``, ``CHUNKHOUND_EMBEDDING__{NAME}``, then None (the default).
    """
    for value in (
        explicit,
        tool.get(name),
        embedding.get(name),
        os.environ.get(f"CHUNKHOUND_EMBEDDING__{name.upper()}"),
    ):
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def api_key(root: Path, embedding: Mapping[str, Any], host: OneToolHost | None) -> tuple[Secret | None, str]:
    """The embeddings API key and where it came from (the source is safe to show; the key is not).

    Precedence: OneTool's ``get_secret("OPENAI_API_KEY")`` (inside OneTool), a ``secrets.yaml`` (the file
    named by ``ONETOOL_CODE_SECRETS``, then ``<project>/secrets.yaml``, then
    ``$XDG_CONFIG_HOME/onetool-code/secrets.yaml``), the project's ``.chunkhound.json`` ``embedding.api_key``,
    ``CHUNKHOUND_EMBEDDING__API_KEY``, then ``OPENAI_API_KEY`` in the environment.
    """
    if host is not None:
        value = host.get_secret(KEY_NAME)
        if value:
            return Secret(value), "OneTool secrets"
    for secrets_file in secrets_files(root):
        value = _read_secrets(secrets_file).get(KEY_NAME)
        if value:
            return Secret(str(value)), str(secrets_file)
    for value, source in (
        (embedding.get("api_key"), ".chunkhound.json"),
        (os.environ.get("CHUNKHOUND_EMBEDDING__API_KEY"), "CHUNKHOUND_EMBEDDING__API_KEY"),
        (os.environ.get(KEY_NAME), KEY_NAME),
    ):
        if value:
            return Secret(str(value)), source
    return None, "none"


def secrets_files(root: Path) -> list[Path]:
    """The ``secrets.yaml`` files that exist, in the order they are consulted."""
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    named = os.environ.get(SECRETS_ENV)
    candidates = [Path(named).expanduser()] if named else []
    candidates += [root / "secrets.yaml", config_home / "onetool-code" / "secrets.yaml"]
    return [c for c in candidates if c.is_file()]


def _read_secrets(secrets_file: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(secrets_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        # The parser's message can quote the file's lines, and so a key: name the file, not the content.
        raise OneToolCodeError(f"Cannot read {secrets_file}: not a flat YAML mapping of NAME: value") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise OneToolCodeError(f"Cannot read {secrets_file}: not a flat YAML mapping of NAME: value")
    return data


def _int_setting(tool: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = tool.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be a whole number, got {value!r}") from exc
    if not low <= number <= high:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be between {low} and {high}, got {number}")
    return number
