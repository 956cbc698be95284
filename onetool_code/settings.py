"""The one place that reads the outside world: paths, env vars, ``.chunkhound.json``, ``secrets.yaml``, OneTool.

Everything is resolved once per call into a frozen ``Settings`` that is passed down; no other module reads
``os.environ`` or a config file. The API key never leaves here readable: ``Secret`` masks its repr.

Keys follow trust. The project's own files (``.chunkhound.json``, ``<project>/secrets.yaml``) come with a
repository the user may not have written, so a ``base_url`` that only they name gets only a key that they hold
too: the user's key (an argument, OneTool, the environment, the user's config) goes to the provider's own
endpoint or to a server the user named. Otherwise a cloned repository could collect keys with one line of JSON.
The key is read only when an embeddings request needs one, so key-free work never depends on a secrets file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from onetool_code import parameters, schema
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.spans import note

DEFAULT_PROVIDER = "openai"
# OneTool's tools.code.timeout: a setting of the host, not a parameter of a call.
TIMEOUT = parameters.Parameter(
    "timeout", "integer", "Seconds per embeddings request, its retries included.", default=30, low=1, high=600
)
MAX_RETRIES = 2
SECRETS_ENV = "ONETOOL_CODE_SECRETS"
PROJECT_CONFIG = ".chunkhound.json"
RERANK_FORMATS = ("auto", "cohere", "tei", "voyage")


@dataclass(frozen=True)
class Provider:
    """An embedding provider ChunkHound offers: its key's name and its own API, the one place the user's key
    for it may go whoever named it (``endpoint``); ``default_rerank_model``: it reranks through its own API
    unless told otherwise."""

    name: str
    key_name: str
    endpoint: str
    default_model: str
    default_rerank_model: str | None = None

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).hostname or ""


# ChunkHound 6.1.0's providers (``embedding.provider``), with its defaults.
PROVIDERS = {
    "openai": Provider("openai", "OPENAI_API_KEY", "https://api.openai.com/v1", "text-embedding-3-small"),
    "voyageai": Provider("voyageai", "VOYAGE_API_KEY", "https://api.voyageai.com/v1", "voyage-3.5", "rerank-2.5"),
}


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
class KeyPlaces:
    """Where a key may be found, read only when an embeddings request needs one (``api_key``)."""

    project_root: Path
    project_key: Secret | None = field(repr=False)  # the project's .chunkhound.json embedding.api_key
    host: OneToolHost | None = field(repr=False)


@dataclass(frozen=True)
class Reranker:
    """A reranker as ChunkHound's ``embedding.rerank_*`` settings configure one; ``problem``: why it cannot be
    used (ChunkHound refuses the same configuration)."""

    format: str  # "cohere", "tei", "voyage" (Voyage's own API or a Voyage-compatible one) or "auto"
    model: str | None
    url: str
    url_source: str  # where the endpoint was named (as ``Settings.base_url_source``), or the provider's own
    batch_size: int = 1000
    problem: str | None = None

    def describe(self) -> str:
        named = f"{self.format} {self.model}" if self.model else self.format
        return f"{named} at {self.url}" + (f" (unusable: {self.problem})" if self.problem else "")


@dataclass(frozen=True)
class Settings:
    project_root: Path
    db_path: Path
    provider: str
    model: str
    base_url: str | None
    base_url_source: str | None  # where base_url was named: "argument", "tools.code", PROJECT_CONFIG, an env var
    keys: KeyPlaces = field(repr=False)
    limit: int = parameters.LIMIT.default
    max_bytes: int = parameters.MAX_BYTES.default
    timeout: float = TIMEOUT.default
    cache: bool = True
    output_dims: int | None = None  # ChunkHound's embedding.output_dims: the index's vectors have that many
    client_side_truncation: bool = False  # ... cut from the model's full vectors here, not by the API
    reranker: Reranker | None = None
    unsupported: str | None = None  # an embedding setup ChunkHound offers that we cannot send requests for

    @property
    def base_url_from_project(self) -> bool:
        """The server was named only by the project's own files (and is not the provider's own endpoint)."""
        return self.untrusted(self.base_url, self.base_url_source)

    @property
    def key_name(self) -> str:
        return PROVIDERS[self.provider].key_name

    @property
    def endpoint(self) -> str:
        """Where embeddings requests go: the named server, else the provider's own API."""
        return (self.base_url or PROVIDERS[self.provider].endpoint).rstrip("/")

    def untrusted(self, url: str | None, source: str | None) -> bool:
        """``url`` was named only by the project's own files and is not the provider's own endpoint."""
        return source == PROJECT_CONFIG and not _official(url, PROVIDERS[self.provider])


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
    for name, value in (("path", path), ("db", db), ("provider", provider), ("model", model), ("base_url", base_url)):
        if value is not None and not isinstance(value, str):
            raise BadInputError(f"{name} must be text, got {type(value).__name__}")
    if cache is not None and not isinstance(cache, bool):
        raise BadInputError(f"cache must be true or false, got {cache!r}")
    if host is not None and not isinstance(host, OneToolHost):
        raise BadInputError(f"host must be OneTool's host (onetool_host()) or None, got {type(host).__name__}")
    tool = dict(host.tool_config) if host else {}
    root = project_root(path)
    project = chunkhound_config(root)
    embedding = project.get("embedding") if isinstance(project.get("embedding"), dict) else {}
    url, url_source = _embedding_setting("base_url", base_url, tool, embedding)
    project_key = embedding.get("api_key")
    chosen = _embedding_setting("provider", provider, tool, embedding)[0] or DEFAULT_PROVIDER
    if chosen not in PROVIDERS:
        raise BadInputError(f"unknown embedding provider {chosen!r}: ChunkHound offers {', '.join(PROVIDERS)}")
    dims = _embedding_setting("output_dims", None, tool, embedding)[0]
    if dims is not None and not (dims.isdigit() and int(dims) > 0):
        raise OneToolCodeError(f"embedding.output_dims must be a positive whole number, got {dims!r}")
    truncation = _embedding_setting("client_side_truncation", None, tool, embedding)[0]
    if truncation is not None and truncation.lower() not in ("true", "false"):
        raise OneToolCodeError(f"embedding.client_side_truncation must be true or false, got {truncation!r}")
    if truncation is not None and truncation.lower() == "true" and dims is None:
        raise OneToolCodeError("embedding.client_side_truncation needs embedding.output_dims (ChunkHound's rule)")
    return Settings(
        project_root=root,
        db_path=index_path(root, db if db is not None else tool.get("db"), project),
        provider=chosen,
        model=_embedding_setting("model", model, tool, embedding)[0] or PROVIDERS[chosen].default_model,
        base_url=url,
        base_url_source=url_source,
        keys=KeyPlaces(root, Secret(str(project_key)) if project_key else None, host),
        limit=_int_setting(tool, parameters.LIMIT),
        max_bytes=_int_setting(tool, parameters.MAX_BYTES),
        timeout=_timeout(tool, embedding),
        cache=cache if cache is not None else _bool_setting(tool, parameters.CACHE),
        output_dims=int(dims) if dims is not None else None,
        client_side_truncation=truncation is not None and truncation.lower() == "true",
        reranker=_reranker(PROVIDERS[chosen], url, tool, embedding),
        unsupported=_unsupported(tool, embedding),
    )


def _unsupported(tool: Mapping[str, Any], embedding: Mapping[str, Any]) -> str | None:
    """Azure OpenAI (ChunkHound's OpenAI provider with ``azure_endpoint``) is not spoken here: rather than send
    its key to OpenAI's own API, every embeddings request is refused with this message."""
    for name in ("azure_endpoint", "azure_deployment", "api_version"):
        if _embedding_setting(name, None, tool, embedding)[0] is not None:
            return (
                f"Azure OpenAI (embedding.{name}) is not supported: no query is embedded, and no key is sent. "
                'mode="lexical" searches without embeddings.'
            )
    return None


def _reranker(
    provider: Provider, base_url: str | None, tool: Mapping[str, Any], embedding: Mapping[str, Any]
) -> Reranker | None:
    """The reranker ChunkHound 6.1.0 would use: ``rerank_url`` (absolute, or relative to ``base_url``) with
    ``rerank_format``; else VoyageAI's own ``/rerank`` when the provider is VoyageAI on its own API (a
    Voyage-compatible server named by ``base_url`` gets no reranking); else none."""
    model, _ = _embedding_setting("rerank_model", None, tool, embedding)
    url, url_source = _embedding_setting("rerank_url", None, tool, embedding)
    form = (_embedding_setting("rerank_format", None, tool, embedding)[0] or "auto").lower()
    batch = _embedding_setting("rerank_batch_size", None, tool, embedding)[0]
    size = min(int(batch), 1000) if batch is not None and batch.isdigit() and int(batch) > 0 else 1000
    if url is None:
        if provider.default_rerank_model is None or base_url is not None:
            return None
        own = f"{provider.endpoint}/rerank"
        return Reranker("voyage", model or provider.default_rerank_model, own, provider.name, size)
    problem = None
    if form not in RERANK_FORMATS:
        problem = f"rerank_format {form!r} is not one of {', '.join(RERANK_FORMATS)}"
    elif form in ("cohere", "voyage") and not model:
        problem = f"rerank_format {form!r} needs rerank_model"
    if not url.startswith(("http://", "https://")):
        if base_url is None:
            return Reranker(form, model, url, url_source or "", size, "a relative rerank_url needs base_url")
        url = f"{base_url.rstrip('/')}/{url.lstrip('/')}"
    return Reranker(form, model, url, url_source or "", size, problem)


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
) -> tuple[str | None, str | None]:
    """One embedding setting and where it was named.

    Precedence: the explicit argument, OneTool's ``tools: {code: {name}}``, the project's
    ``.chunkhound.json`` ``embedding.{name}``, ``CHUNKHOUND_EMBEDDING__{NAME}``, then None (the default).
    """
    env = f"CHUNKHOUND_EMBEDDING__{name.upper()}"
    for value, source in (
        (explicit, "argument"),
        (tool.get(name), f"tools.code.{name}"),
        (embedding.get(name), PROJECT_CONFIG),
        (os.environ.get(env), env),
    ):
        if value is not None and str(value).strip():
            return str(value).strip(), source
    return None, None


def _official(url: str | None, provider: Provider) -> bool:
    """``url`` is the provider's own API (None stands for it)."""
    if url is None:
        return True
    parsed = urlsplit(url)
    return parsed.scheme == "https" and (parsed.hostname or "").lower() == provider.host


def api_key(settings: Settings, url: str | None = None, url_source: str | None = None) -> tuple[Secret | None, str]:
    """The key of the call's provider for a request to ``url`` (default: the embeddings endpoint) and where it
    came from (the source is safe to show).

    Precedence, with the provider's key name (``OPENAI_API_KEY``, ``VOYAGE_API_KEY``): OneTool's
    ``get_secret(name)`` (inside OneTool), a ``secrets.yaml`` (the file named by ``ONETOOL_CODE_SECRETS``,
    then ``<project>/secrets.yaml``, then ``$XDG_CONFIG_HOME/onetool-code/secrets.yaml``), the project's
    ``.chunkhound.json`` ``embedding.api_key``, ``CHUNKHOUND_EMBEDDING__API_KEY``, then ``name`` in the
    environment. One provider's key never stands in for another's. When the URL comes only from the project's
    files, only the keys those files hold qualify (see the module docstring).
    """
    if url is None:
        url, url_source = settings.base_url, settings.base_url_source
    project_only = settings.untrusted(url, url_source)
    for value, source, from_project in _key_candidates(settings.keys, settings.key_name):
        if value and (from_project or not project_only):
            return Secret(str(value)), source
    return None, "none"


def _key_candidates(places: KeyPlaces, name: str) -> Iterator[tuple[object, str, bool]]:
    """(key, where, whether the project's own files hold it), in precedence order, read lazily."""
    if places.host is not None:
        yield places.host.get_secret(name), "OneTool secrets", False
    named = os.environ.get(SECRETS_ENV)
    if named:
        named_file = Path(named).expanduser()
        yield _read_secrets(named_file, explicit=True).get(name), str(named_file), False
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    for secrets_file, from_project in (
        (places.project_root / "secrets.yaml", True),
        (config_home / "onetool-code" / "secrets.yaml", False),
    ):
        if secrets_file.is_file():
            yield _read_secrets(secrets_file, explicit=False).get(name), str(secrets_file), from_project
    yield places.project_key, PROJECT_CONFIG, True
    yield os.environ.get("CHUNKHOUND_EMBEDDING__API_KEY"), "CHUNKHOUND_EMBEDDING__API_KEY", False
    yield os.environ.get(name), name, False


def _read_secrets(secrets_file: Path, *, explicit: bool) -> Mapping[str, Any]:
    """A flat ``NAME: value`` mapping. A file named on purpose must be one; a ``secrets.yaml`` that merely sits
    in the project or config directory may be anything (a Kubernetes manifest, say) and is skipped, with a note."""
    # The parser's message can quote the file's lines, and so a key: name the file, not the content.
    import yaml  # only when a key is needed: 25 ms of every command's start otherwise

    problem = f"Cannot read {secrets_file}: not a flat YAML mapping of NAME: value"
    try:
        data = yaml.safe_load(secrets_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        if explicit:
            raise OneToolCodeError(problem) from exc
        data = []
    if data is None:
        return {}
    if not isinstance(data, dict):
        if explicit:
            raise OneToolCodeError(problem)
        note(f"skipped {secrets_file}: not a flat YAML mapping of NAME: value")
        return {}
    return data


def _timeout(tool: Mapping[str, Any], embedding: Mapping[str, Any]) -> float:
    """Seconds for one embeddings request, retries included: ``tools.code.timeout``, else ChunkHound's own
    ``embedding.timeout`` from ``.chunkhound.json`` (the index was built with that server's pace), else 30."""
    if tool.get(TIMEOUT.name) is not None:
        return float(_int_setting(tool, TIMEOUT))
    value = embedding.get("timeout")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and TIMEOUT.low <= value <= TIMEOUT.high:
        return float(value)
    if value is not None:
        note(f"ignored {PROJECT_CONFIG} embedding.timeout {value!r}: not a number of seconds from 1 to 600")
    return float(TIMEOUT.default)


def _bool_setting(tool: Mapping[str, Any], parameter: parameters.Parameter) -> bool:
    value = tool.get(parameter.name, parameter.default)
    if not isinstance(value, bool):
        raise OneToolCodeError(f"OneTool setting tools.code.{parameter.name} must be true or false, got {value!r}")
    return value


def _int_setting(tool: Mapping[str, Any], parameter: parameters.Parameter) -> int:
    """A whole number from OneTool's ``tools.code`` within the parameter's range, else its default."""
    name, low, high = parameter.name, parameter.low, parameter.high
    value = tool.get(name)
    if value is None:
        return parameter.default
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be a whole number, got {value!r}") from exc
    if not low <= number <= high:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be between {low} and {high}, got {number}")
    return number
