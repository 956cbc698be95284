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

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from onetool_code import advice, parameters, published, schema
from onetool_code.errors import BadInputError, EmbeddingError, OneToolCodeError
from onetool_code.reading import SMALL_FILE, is_regular, read_regular
from onetool_code.spans import note

DEFAULT_PROVIDER = "openai"
# OneTool's tools.code.timeout: a setting of the host, not a parameter of a call.
TIMEOUT = parameters.Parameter(
    "timeout", "integer", "Seconds per embeddings request, its retries included.", default=30, low=1, high=600
)
MAX_RETRIES = 2
SECRETS_ENV = "ONETOOL_CODE_SECRETS"
ONETOOL_SECRETS = "OneTool secrets"
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
    unusable: str | None = None  # why no embeddings request can be sent (Azure, a base_url that is no URL)
    # Nothing of the user's or the project's named a model: the index's record (``committed``) named it, or, with
    # no record, the index's largest vector set decides (ChunkHound 6.1's rule).
    model_from_index: bool = False
    committed: Committed | None = None

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
        if name in ("path", "db") and value is not None and "\x00" in value:
            raise BadInputError(f"{name} must not hold a NUL character")
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
    db_path = index_path(root, db if db is not None else tool.get("db"), project)
    named_provider = _embedding_setting("provider", provider, tool, embedding)[0]
    named_model = _embedding_setting("model", model, tool, embedding)[0]
    record = None if named_model else committed(db_path)
    if record is not None and named_provider not in (None, record.provider):
        record = None  # another provider is named: its default model, as ChunkHound re-embeds for a switch
    chosen = record.provider if record else named_provider or DEFAULT_PROVIDER
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
        db_path=db_path,
        provider=chosen,
        model=record.model if record else named_model or PROVIDERS[chosen].default_model,
        base_url=url,
        base_url_source=url_source,
        keys=KeyPlaces(root, Secret(str(project_key)) if project_key else None, host),
        limit=_int_setting(tool, parameters.LIMIT),
        max_bytes=_int_setting(tool, parameters.MAX_BYTES),
        timeout=_timeout(tool, embedding),
        cache=cache if cache is not None else _bool_setting(tool, parameters.CACHE),
        output_dims=int(dims) if dims is not None else None,
        client_side_truncation=truncation is not None and truncation.lower() == "true",
        reranker=_reranker(PROVIDERS[chosen], url, url_source, tool, embedding),
        unusable=_unusable(url, url_source, tool, embedding),
        model_from_index=named_model is None,
        committed=record,
    )


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


def _unusable(
    base_url: str | None, base_url_source: str | None, tool: Mapping[str, Any], embedding: Mapping[str, Any]
) -> str | None:
    """Why every embeddings request is refused, with this message: a ``base_url`` that is no URL to send to, or
    Azure OpenAI (ChunkHound's OpenAI provider with ``azure_endpoint``), not spoken here: rather than send its key
    to OpenAI's own API."""
    problem = url_problem(base_url)
    if problem is not None:
        return f"embedding.base_url {base_url!r} (from {_place(base_url_source or '')}) {problem}."
    for name in ("azure_endpoint", "azure_deployment", "api_version"):
        if _embedding_setting(name, None, tool, embedding)[0] is not None:
            return (
                f"Azure OpenAI (embedding.{name}) is not supported: no query is embedded, and no key is sent. "
                f"{advice.option('mode', 'lexical')} searches without embeddings."
            )
    return None


def _reranker(
    provider: Provider,
    base_url: str | None,
    base_url_source: str | None,
    tool: Mapping[str, Any],
    embedding: Mapping[str, Any],
) -> Reranker | None:
    """The reranker ChunkHound 6.1.0 would use: ``rerank_url`` (absolute, or relative to ``base_url``) with
    ``rerank_format``; else VoyageAI's own ``/rerank`` when the provider is VoyageAI on its own API (a
    Voyage-compatible server named by ``base_url`` gets no reranking); else none. A relative ``rerank_url`` is
    trusted as its server is: a URL made of two parts is the project's when either part is."""
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
        if base_url_source == PROJECT_CONFIG:
            url_source = PROJECT_CONFIG
    unsendable = url_problem(url)
    if unsendable is not None:
        return Reranker(form, model, repr(url), url_source or "", size, f"rerank_url {unsendable}")
    return Reranker(form, model, url, url_source or "", size, problem)


def project_root(path: str | None) -> Path:
    """The project directory.

    Precedence: ``path`` (``~`` expanded; relative paths against ``OT_CWD``, else the current directory),
    then ``OT_CWD``, then the current directory.
    """
    if published.is_url(path):  # a store URL: the newest published version, fetched into the cache
        return published.place(str(path), store_environment())
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


# Published indexes: seconds between two checks of a store for a new version (``ONETOOL_CODE_REFRESH``).
REFRESH_ENV = "ONETOOL_CODE_REFRESH"
REFRESH_SECONDS = 60.0
_S3_ENDPOINTS = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT")
_CREDENTIAL_NAMES = re.compile(r"(SECRET|TOKEN|PASSWORD|KEY|CREDENTIAL|SAS)", re.IGNORECASE)


def store_environment() -> published.Environment:
    """What reaching an object store needs from the user's side (never from a repository): the cache folder,
    the refresh period, an S3-compatible endpoint as the AWS tools take it, keys of the AWS tools' shared files
    when the environment names none, and every credential value, to keep out of messages."""
    cache = os.environ.get("ONETOOL_CODE_CACHE_DIR")  # ``index.store.cache_root``'s rule
    root = Path(cache) if cache else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "onetool-code"
    try:
        refresh = max(0.0, float(os.environ.get(REFRESH_ENV) or REFRESH_SECONDS))
    except ValueError:
        raise BadInputError(f"{REFRESH_ENV} must be a number of seconds, got {os.environ[REFRESH_ENV]!r}") from None
    profile = _aws_profile()
    secrets = {v for n, v in os.environ.items() if len(v) >= 6 and _CREDENTIAL_NAMES.search(n)}
    secrets |= {v for n, v in profile.items() if n != "region" and len(v) >= 6}
    return published.Environment(
        cache_root=root.expanduser(),
        refresh=refresh,
        s3_endpoint=next((os.environ[name] for name in _S3_ENDPOINTS if os.environ.get(name)), None),
        s3_profile=profile,
        secrets=tuple(sorted(secrets, key=len, reverse=True)),
    )


def _aws_profile() -> dict[str, str]:
    """Keys from the AWS tools' shared files (``~/.aws/credentials`` and ``~/.aws/config``, or the files
    ``AWS_SHARED_CREDENTIALS_FILE`` and ``AWS_CONFIG_FILE`` name), profile ``AWS_PROFILE`` or ``default``, when
    the environment names none: the store client reads the variables, roles and web identity itself, not these."""
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return {}
    import configparser

    name = os.environ.get("AWS_PROFILE") or "default"
    credentials = configparser.ConfigParser()
    config = configparser.ConfigParser()
    try:
        credentials.read(Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials").expanduser())
        config.read(Path(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser())
    except (OSError, configparser.Error, UnicodeDecodeError):
        return {}
    found: dict[str, str] = {}
    section = credentials[name] if credentials.has_section(name) else {}
    for option in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
        if section.get(option):
            found[option.removeprefix("aws_")] = section[option]
    wanted = "default" if name == "default" else f"profile {name}"
    region = config[wanted].get("region") if config.has_section(wanted) else None
    if region and not os.environ.get("AWS_REGION"):
        found["region"] = region
    return found if "access_key_id" in found or "region" in found else {}


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


def index_path(root: Path, db: str | None, project: Mapping[str, Any]) -> Path:
    """Where the index file is (it may not exist).

    Precedence: ``db`` (relative to the project root, absolute allowed, or a store URL), then ChunkHound's own resolution:
    ``.chunkhound.json`` ``database.path``, ``CHUNKHOUND_DATABASE__PATH`` (legacy ``CHUNKHOUND_DB_PATH``),
    ``.chunkhound/db/chunks.db``; when none of those exists, the legacy file ``.chunkhound/db`` and then
    OneTool's old ``.chunkhound/chunks.db`` are tried before settling on ChunkHound's default.
    """
    if published.is_url(db):  # a published index searched against this checkout: its files are read here
        return published.database(str(db), store_environment())
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


def _embedding_setting(
    name: str, explicit: str | None, tool: Mapping[str, Any], embedding: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """One embedding setting and where it was named.

    Precedence: the explicit argument, OneTool's ``tools: {code: {name}}``, the project's
    ``.chunkhound.json`` ``embedding.{name}``, ``CHUNKHOUND_EMBEDDING__{NAME}``, then None (the default).
    """
    env = f"CHUNKHOUND_EMBEDDING__{name.upper()}"
    users = os.environ.get(env)
    for value, source in (
        (explicit, "argument"),
        (tool.get(name), f"tools.code.{name}"),
        (embedding.get(name), PROJECT_CONFIG),
        (users, env),
    ):
        if value is not None and str(value).strip():
            if source == PROJECT_CONFIG and users is not None and users.strip() == str(value).strip():
                source = env  # the user names it too: the user's, as trust goes
            return str(value).strip(), source
    return None, None


def _official(url: str | None, provider: Provider) -> bool:
    """``url`` is the provider's own API (None stands for it)."""
    if url is None:
        return True
    if url_problem(url) is not None:
        return False
    parsed = urlsplit(url)
    return parsed.scheme == "https" and (parsed.hostname or "").lower() == provider.host


def url_problem(url: str | None) -> str | None:
    """Why ``url`` is not an address to send requests to (None: it is, or there is none), said so that a caller
    can append it to the URL's name."""
    if url is None:
        return None
    if any(c.isspace() or not c.isprintable() for c in url):
        return "holds a space or a control character"
    try:
        parsed = urlsplit(url)
        parsed.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError as exc:
        return f"does not parse ({exc})"
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return "is not an http:// or https:// URL with a host"
    return None


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
        # A YAML block scalar or a paste leaves a line break or a space at the end: not part of the key.
        key = str(value).strip() if value is not None else ""
        if key and (from_project or not project_only):
            if not _HEADER_SAFE.fullmatch(key):
                # The key goes in an Authorization header; an HTTP library that refuses it quotes the whole header
                # in its error. Name the key and its place, never its text.
                raise EmbeddingError(
                    f"the {settings.key_name} from {_place(source)} holds a character that cannot be sent in a "
                    "request header (a space, a line break, a control or non-ASCII character): correct it there."
                )
            return Secret(key), source
    return None, "none"


# What an API key may hold: visible ASCII, as an HTTP header value carries it after "Bearer ".
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def _place(source: str) -> str:
    """Where a key came from, said for a person (``api_key``'s sources are file paths, or names)."""
    if source == PROJECT_CONFIG:
        return f"the project's {PROJECT_CONFIG}"
    if source == ONETOOL_SECRETS:
        return "OneTool's secrets"
    if source == "argument":
        return "the call's arguments"
    if source.startswith("tools.code."):
        return f"OneTool's {source}"
    if "/" not in source:
        return f"the environment variable {source}"
    return source


def _key_candidates(places: KeyPlaces, name: str) -> Iterator[tuple[object, str, bool]]:
    """(key, where, whether the project's own files hold it), in precedence order, read lazily."""
    if places.host is not None:
        yield places.host.get_secret(name), ONETOOL_SECRETS, False
    named = os.environ.get(SECRETS_ENV)
    named_file = Path(named).expanduser() if named else None
    if named_file is not None:
        yield _read_secrets(named_file, explicit=True).get(name), str(named_file), False
    user_file = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "onetool-code" / "secrets.yaml"
    project_file = _projects_own(places.project_root / "secrets.yaml", (named_file, user_file))
    if project_file is not None:
        yield _read_secrets(project_file, explicit=False).get(name), str(project_file), True
    if is_regular(user_file):
        yield _read_secrets(user_file, explicit=False).get(name), str(user_file), False
    yield places.project_key, PROJECT_CONFIG, True
    yield os.environ.get("CHUNKHOUND_EMBEDDING__API_KEY"), "CHUNKHOUND_EMBEDDING__API_KEY", False
    yield os.environ.get(name), name, False


def _projects_own(candidate: Path, users: Sequence[Path | None]) -> Path | None:
    """``candidate`` when it is the project's own file: a regular file in the project, not a link (git stores
    symlinks, so a repository can point its ``secrets.yaml`` at the user's), and not one of the user's own files
    under another name (a hard link)."""
    try:
        found = candidate.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    for user in users:
        with contextlib.suppress(OSError):
            if user is not None and os.path.samestat(found, user.stat()):
                return None
    return candidate


def _read_secrets(secrets_file: Path, *, explicit: bool) -> Mapping[str, Any]:
    """A flat ``NAME: value`` mapping. A file named on purpose must be one; a ``secrets.yaml`` that merely sits
    in the project or config directory may be anything (a Kubernetes manifest, say) and is skipped, with a note."""
    # The parser's message can quote the file's lines, and so a key: name the file, not the content.
    import yaml  # only when a key is needed: 25 ms of every command's start otherwise

    problem = f"Cannot read {secrets_file}: not a flat YAML mapping of NAME: value"
    try:
        data = yaml.safe_load(read_regular(secrets_file, SMALL_FILE).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
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
    """Seconds a search may wait on servers, every request and retry included: the user's (``tools.code.timeout``,
    else ``CHUNKHOUND_EMBEDDING__TIMEOUT``, else 30), or the project's ``.chunkhound.json`` ``embedding.timeout``
    when that is shorter (the index was built at that server's pace). A repository may lower it, never raise it:
    a longer wait is what a server that stalls searches would ask for."""
    env = os.environ.get("CHUNKHOUND_EMBEDDING__TIMEOUT")
    if tool.get(TIMEOUT.name) is not None:
        users = float(_int_setting(tool, TIMEOUT))
    elif env is not None and _seconds(env) is not None:
        users = float(env)
    else:
        if env is not None:
            note(f"ignored CHUNKHOUND_EMBEDDING__TIMEOUT {env!r}: not a number of seconds from 1 to 600")
        users = float(TIMEOUT.default)
    value = embedding.get("timeout")
    projects = _seconds(value)
    if value is not None and projects is None:
        note(f"ignored {PROJECT_CONFIG} embedding.timeout {value!r}: not a number of seconds from 1 to 600")
    return min(users, projects) if projects is not None else users


def _seconds(value: object) -> float | None:
    """A timeout from 1 to 600 seconds, as a number or its text; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if TIMEOUT.low <= seconds <= TIMEOUT.high else None


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


# -- workspaces: several project roots under one name -----------------------------------------------------------

Workspaces = dict[str, list[str]]


def workspaces(host: OneToolHost | None) -> Workspaces:
    """The named workspaces of OneTool's config, ``tools.code.workspaces: {name: [project roots]}`` (the user's
    own file: trusted; relative roots resolve as any ``path``). None configured: none."""
    found = dict(host.tool_config).get("workspaces") if host else None
    return {} if found is None else _workspaces(found, "tools.code.workspaces", None)


def workspace_file(path: str) -> tuple[Workspaces, list[str] | None]:
    """The workspaces of a file the user points the CLI or the MCP server at (``--workspace FILE``): JSON or
    YAML, ``{name: [project roots]}``, or a list of roots (then the default when no path is given; a mapping's
    only workspace is the default too). Relative roots are relative to the file's folder. A file named on
    purpose must be one: anything else is an error naming it."""
    import yaml  # JSON is YAML; only this option pays for the import

    file = Path(path).expanduser().absolute()
    try:
        file = file.resolve()
        data = yaml.safe_load(read_regular(file, SMALL_FILE).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, RuntimeError) as exc:
        raise BadInputError(f"cannot read the workspace file {file}: {exc}") from exc
    if isinstance(data, list):
        return {}, _roots(data, str(file), file.parent)
    named = _workspaces(data, str(file), file.parent)
    return named, next(iter(named.values())) if len(named) == 1 else None


def named_paths(path: object, named: Mapping[str, list[str]]) -> object:
    """``path`` with each ``@name`` (alone, or an entry of a list) replaced by that workspace's roots; other
    values as given. ``./@name`` is a folder of that name."""

    def expand(value: object) -> list[object]:
        if not (isinstance(value, str) and value.startswith("@")):
            return [value]
        if value[1:] not in named:
            known = ", ".join(f"@{n}" for n in named) or "none (tools.code.workspaces, or --workspace FILE)"
            raise BadInputError(f"unknown workspace {value}; configured: {known}")
        return list(named[value[1:]])

    if isinstance(path, str):
        roots = expand(path)
        return roots[0] if len(roots) == 1 and roots[0] == path else roots
    if isinstance(path, (list, tuple)):
        return [root for value in path for root in expand(value)]
    return path


def _workspaces(data: object, where: str, base: Path | None) -> Workspaces:
    if not isinstance(data, dict) or not all(isinstance(name, str) and name for name in data):
        raise BadInputError(f"{where} must map workspace names to lists of project roots")
    return {name: _roots(roots, f"{where}: {name}", base) for name, roots in data.items()}


def _roots(data: object, where: str, base: Path | None) -> list[str]:
    if not isinstance(data, list) or not data or not all(isinstance(r, str) and r.strip() for r in data):
        raise BadInputError(f"{where} must be a non-empty list of project roots (texts)")
    if base is None:
        return list(data)
    return [root if published.is_url(root) else str(base / Path(root).expanduser()) for root in data]
