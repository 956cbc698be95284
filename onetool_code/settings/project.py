"""A project on disk as ChunkHound finds it: its root, its ``.chunkhound.json``, where its index file is, and the
model the index committed to."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onetool_code import published, schema
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.reading import SMALL_FILE, read_regular
from onetool_code.settings.providers import PROVIDERS
from onetool_code.settings.stores import store_environment

PROJECT_CONFIG = ".chunkhound.json"


def project_root(path: str | None, tool: Mapping[str, Any] | None = None) -> Path:
    """The project directory.

    Precedence: ``path`` (``~`` expanded; relative paths against ``OT_CWD``, else the current directory),
    then ``OT_CWD``, then the current directory. A store URL is the newest version published there, fetched into
    the cache (``tool``, OneTool's ``tools.code``, may say how often the store is asked for a newer one).
    """
    if published.is_url(path):
        return published.place(str(path), store_environment(tool))
    base = Path(os.environ.get("OT_CWD") or Path.cwd()).expanduser()
    if path is None or not str(path).strip():
        root = base
    else:
        candidate = Path(str(path).strip()).expanduser()
        root = candidate if candidate.is_absolute() else base / candidate
    try:
        root = root.resolve()
        found, folder = root.exists(), root.is_dir()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13), a name too long
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "a symbolic link that loops"
        raise BadInputError(f"Project path cannot be used: {root} ({reason})") from None
    if not found:
        raise BadInputError(f"Project path does not exist: {root}")
    if not folder:
        raise BadInputError(f"Project path is not a directory: {root}")
    return root


def chunkhound_config(root: Path) -> dict[str, Any]:
    """The project's ``.chunkhound.json`` as a dict ({} when absent)."""
    config_file = root / ".chunkhound.json"
    if not config_file.exists():
        return {}
    try:
        data = json.loads(read_regular(config_file, SMALL_FILE).decode("utf-8"))
    except OSError as exc:
        raise OneToolCodeError(f"Cannot read {config_file}: {exc.strerror or exc}") from exc
    except RecursionError as exc:
        raise OneToolCodeError(f"Cannot read {config_file}: nested too deeply") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OneToolCodeError(f"Cannot read {config_file}: {exc}") from exc
    if not isinstance(data, dict):
        raise OneToolCodeError(f"Cannot read {config_file}: expected a JSON object")
    return data


def index_path(root: Path, db: str | None, project: Mapping[str, Any], tool: Mapping[str, Any] | None = None) -> Path:
    """Where the index file is (it may not exist).

    Precedence: ``db`` (relative to the project root, absolute allowed, or a store URL: a published index searched
    against this checkout, its files read here), then ChunkHound's own resolution:
    ``.chunkhound.json`` ``database.path``, ``CHUNKHOUND_DATABASE__PATH`` (legacy ``CHUNKHOUND_DB_PATH``),
    ``.chunkhound/db/chunks.db``; when none of those exists, the legacy file ``.chunkhound/db`` and then
    OneTool's old ``.chunkhound/chunks.db`` are tried before settling on ChunkHound's default.
    """
    if published.is_url(db):
        return published.database(str(db), store_environment(tool))
    if db is not None and str(db).strip():
        return _database_file(root, str(db).strip())
    database = project.get("database")
    configured = database.get("path") if isinstance(database, dict) else None
    configured = configured or os.environ.get("CHUNKHOUND_DATABASE__PATH") or os.environ.get("CHUNKHOUND_DB_PATH")
    if configured:
        if "\x00" in str(configured):
            raise OneToolCodeError(f"database.path in {PROJECT_CONFIG} (or CHUNKHOUND_DATABASE__PATH) holds a NUL")
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
    if target.suffix in {".db", ".duckdb"}:
        return _findable(target)
    if _findable(target).is_file():
        return target
    return _findable(target / schema.DB_FILE_NAME)


def _findable(path: Path) -> Path:
    """``path``, if the system can look it up (whether or not it exists): a name over 255 bytes or a loop of
    symbolic links (the user's ``--db`` or a repository's ``database.path``) is one clear error, not a crash."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        pass
    except OSError as exc:
        raise BadInputError(f"the index path cannot be used: {path} ({exc.strerror or exc})") from None
    return path


@dataclass(frozen=True)
class Committed:
    """The vectors ChunkHound 6.1 committed an index to: its ``chunks.db.embedding.json`` record."""

    path: Path
    provider: str
    model: str
    dims: int | None


def committed(db_path: Path) -> Committed | None:
    """The index's own record of its model, when nothing names one (ChunkHound's rule: the record wins, then the
    vector set with the most vectors).

    A record that cannot be read, is not ChunkHound's version 1, or names a provider we do not speak counts as
    none: the repository wrote it, and the largest vector set still says what the index holds.
    """
    path = db_path.with_name(db_path.name + schema.EMBEDDING_SIDECAR_SUFFIX)
    try:
        record = json.loads(read_regular(path, SMALL_FILE).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("version") != 1:
        return None
    provider, model, dims = record.get("provider"), record.get("model"), record.get("dims")
    if provider not in PROVIDERS or not isinstance(model, str) or not model.strip():
        return None
    if not (dims is None or (type(dims) is int and dims > 0)):
        return None
    return Committed(path, provider, model.strip(), dims)
