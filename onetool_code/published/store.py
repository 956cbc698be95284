"""One object store, named by a URL, reached with the user's own credentials and never the repository's.

The client is ``obstore`` (the bindings of Rust's ``object_store``): S3 and everything that speaks it (R2, MinIO,
SeaweedFS), GCS, Azure and a local folder in one wheel of 5 MB with no Python dependencies; it streams ranges,
sends conditional GETs (``If-None-Match``) and puts large files in parts. It is imported only when a URL is used.

Credentials come from where the store's own tools look: for S3 the standard variables (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, read by the client), the instance's or
container's role, the AWS tools' shared files, and an S3-compatible endpoint in ``AWS_ENDPOINT_URL`` (or
``AWS_ENDPOINT_URL_S3``), as the AWS CLI reads it (``settings`` gathers what the client does not read itself into
an ``Environment``); for GCS and Azure their variables. Plain HTTP is allowed to a loopback endpoint only. No
credential is ever part of a message: every text that leaves this module passes ``redact``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.published.environment import Environment

SCHEMES = ("s3", "gs", "az", "file")
URL = re.compile(r"^(s3|gs|az|file)://", re.IGNORECASE)
# A store that does not answer is given up on quickly: searches then answer from the cached version.
CONNECT_TIMEOUT_SECONDS = 3
RETRIES = 1
RETRY_TIMEOUT_SECONDS = 5


class StoreError(OneToolCodeError):
    """The store could not be reached or refused a request; the message holds no credential."""


class RowsUnreachable(StoreError):
    """The rows a search must rescore are still in a store that cannot be reached: semantic mode cannot answer,
    hybrid answers by words."""

    SHORT = "the vectors of this published version are not all on this machine yet, and its store cannot be reached"


class Missing(StoreError):
    """The object asked for is not in the store."""


class Unchanged(StoreError):
    """A conditional GET found the object as it was (HTTP 304)."""


def is_url(text: object) -> bool:
    """Whether a project root is a store URL rather than a folder."""
    return isinstance(text, str) and URL.match(text.strip()) is not None


@dataclass(frozen=True)
class Location:
    """A store URL, checked: ``url`` without user, password or query (what messages and the cache key use)."""

    url: str
    scheme: str
    name: str  # the prefix's last part (the bucket's name when there is none): a workspace label

    @classmethod
    def parse(cls, text: str) -> Location:
        text = text.strip()
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise BadInputError(f"a store URL starts with {', '.join(s + '://' for s in SCHEMES)}")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise BadInputError(
                "a store URL names no user, password, query or fragment: credentials come from the environment "
                "(AWS_ACCESS_KEY_ID, ...), never from a URL"
            )
        if scheme == "file":
            if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
                raise BadInputError(f"a file:// URL names an absolute folder: file:///path, got {text}")
        elif not parts.netloc:
            raise BadInputError(f"a {scheme}:// URL names a bucket: {scheme}://bucket/prefix, got {text}")
        path = parts.path.rstrip("/")
        if any(piece in (".", "..") for piece in path.split("/")):
            raise BadInputError(f"a store URL's prefix holds no '.' or '..' part, got {text}")
        url = f"{scheme}://{parts.netloc}{path}"
        return cls(url, scheme, (path.rsplit("/", 1)[-1] or parts.netloc or "store"))


class Store:
    """The objects under one URL's prefix; keys are relative to it."""

    def __init__(self, location: Location, env: Environment, *, create: bool = False) -> None:
        self.location = location
        self._secrets = env.secrets
        self._store = _open(location, env, create)

    def get(self, key: str, *, etag: str | None = None, limit: int) -> tuple[bytes, str | None]:
        """A small object whole (at most ``limit`` bytes) and its ETag; ``Unchanged`` when ``etag`` still is."""
        import obstore

        options: dict[str, Any] = {"if_none_match": etag} if etag else {}
        result = self._call(lambda: obstore.get(self._store, key, options=options), key)
        size = int(result.meta["size"])
        if size > limit:
            raise StoreError(f"{self._where(key)} is {size:,} bytes, more than the {limit:,} allowed")
        data = self._call(lambda: bytes(result.bytes()), key)
        return data, result.meta.get("e_tag")

    def stream(self, key: str, offset: int, size: int) -> Iterator[bytes]:
        """The object's bytes from ``offset``, refused if the store holds another size than the manifest says."""
        import obstore

        options: dict[str, Any] = {"range": {"offset": offset}} if offset else {}
        result = self._call(lambda: obstore.get(self._store, key, options=options), key)
        if int(result.meta["size"]) != size:
            raise StoreError(f"{self._where(key)} is {int(result.meta['size']):,} bytes; its manifest says {size:,}")
        chunks = iter(result.stream(min_chunk_size=4 << 20))
        while True:
            chunk = self._call(lambda: next(chunks, None), key)
            if chunk is None:
                return
            yield bytes(chunk)

    def ranges(self, key: str, starts: list[int], ends: list[int], *, gap: int) -> list[bytes]:
        """Byte ranges of one object (requests in parallel; ranges less than ``gap`` apart fetched as one)."""
        import obstore

        found = self._call(lambda: obstore.get_ranges(self._store, key, starts=starts, ends=ends, coalesce=gap), key)
        return [bytes(b) for b in found]

    def put(self, key: str, data: bytes | Path) -> None:
        import obstore

        self._call(lambda: obstore.put(self._store, key, data), key)

    def list(self, prefix: str) -> list[str]:
        import obstore

        def listed() -> list[str]:
            return [item["path"] for batch in obstore.list(self._store, prefix) for item in batch]

        return self._call(listed, prefix)

    def delete(self, keys: list[str]) -> None:
        import obstore

        if keys:
            self._call(lambda: obstore.delete(self._store, keys), keys[0])

    def _reason(self, exc: BaseException) -> str:
        return redact(_first_line(exc), self._secrets)

    def _where(self, key: str) -> str:
        return f"{self.location.url}/{key}"

    def _call(self, work: Any, key: str) -> Any:
        """``work()``, the store's exceptions made ours, with a message of one line and no credential."""
        import obstore.exceptions as failed

        try:
            return work()
        except failed.NotModifiedError:
            raise Unchanged(self._where(key)) from None
        except (failed.NotFoundError, FileNotFoundError):
            raise Missing(f"{self._where(key)} is not in the store") from None
        except (failed.PermissionDeniedError, failed.UnauthenticatedError) as exc:
            raise StoreError(f"the store refused access to {self._where(key)}: {self._reason(exc)}") from None
        except Exception as exc:  # the client's own errors (connection refused, timeouts, HTTP errors) are one class
            reason = self._reason(exc)
            if "status code" in reason:  # it answered: the request is wrong for it (a bucket missing, a bad name)
                raise StoreError(f"the store {self.location.url} refused a request: {reason}") from None
            raise StoreError(f"the store {self.location.url} cannot be reached: {reason}") from None


def _open(location: Location, env: Environment, create: bool) -> Any:
    """The client for one URL, configured only from the user's side; a ``file://`` folder is made only by a
    publisher."""
    from datetime import timedelta

    from obstore.store import LocalStore, from_url

    if location.scheme == "file":
        folder = Path(urlsplit(location.url).path)
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        elif not folder.is_dir():
            raise Missing(f"{location.url} is not a folder")
        return LocalStore(folder)
    client: dict[str, Any] = {"connect_timeout": timedelta(seconds=CONNECT_TIMEOUT_SECONDS), "allow_http": False}
    endpoint = env.s3_endpoint if location.scheme == "s3" else None
    if endpoint is not None and urlsplit(endpoint).scheme == "http":
        if not _loopback(urlsplit(endpoint).hostname or ""):
            raise BadInputError(
                f"the S3 endpoint {redact(endpoint, env.secrets)} is plain HTTP to another machine: credentials and "
                "code would cross the network unencrypted. Use https://, or http:// to 127.0.0.1 only"
            )
        client["allow_http"] = True
    retry = {"max_retries": RETRIES, "retry_timeout": timedelta(seconds=RETRY_TIMEOUT_SECONDS)}
    profile = dict(env.s3_profile) if location.scheme == "s3" else {}
    try:
        return from_url(location.url, client_options=client, retry_config=retry, **profile)  # type: ignore[arg-type]
    except Exception as exc:
        raise StoreError(f"the store {location.url} cannot be used: {redact(_first_line(exc), env.secrets)}") from None


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _first_line(exc: BaseException) -> str:
    """The first line of what the client said, less its debug tail."""
    return str(exc).strip().split("\n")[0][:300] or type(exc).__name__


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every credential value masked."""
    for value in secrets:
        if value in text:
            text = text.replace(value, "***")
    return text
