"""The embedding providers ChunkHound offers and the rerankers it configures: facts, and which URLs a request may
go to."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PROVIDER = "openai"

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


def official(url: str | None, provider: Provider) -> bool:
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
