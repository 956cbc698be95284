"""HTTP for the embeddings and reranker requests: a deadline over a whole request, answers read up to a bound,
and failures said safely.

The trap: an HTTP client's timeout bounds each read, not a request, so a server that sends a byte every few
seconds keeps a request going forever, and the server is whatever a repository's ``.chunkhound.json`` names. So
every request runs on a thread of its own and is waited for until the search's deadline only (``within``); past
it, the client it uses is closed, which ends the request at its next read. Clients are kept one per server (the
origin), so closing one cuts off nothing but requests to the server that stalled.

An answer is read up to a bound that fits its request (``bounded``, ``read_bounded``), never whole: a query's
vectors or a ranking are kilobytes, and an HTTP client otherwise holds a 200 MB body (1.4 GB of parsed JSON) in
memory before any check can say it is not an embeddings list.

A library's message about a failed request can quote the request, headers included (``Illegal header value
b'Bearer sk-...'``), so ours name the operating system's reason, or the kind of failure, never the library's text.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar
from urllib.parse import urlsplit

from onetool_code.errors import Stalled, TooLarge

T = TypeVar("T")


class Budget:
    """The time one search may wait on the network, all its requests and retries together. The clock starts at
    the first request, so reading the index before it costs the budget nothing."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline: float | None = None

    def deadline(self) -> float:
        if self._deadline is None:
            self._deadline = time.monotonic() + self.seconds
        return self._deadline

    def left(self) -> float:
        return max(self.deadline() - time.monotonic(), 0.0)


def within(deadline: float, call: Callable[[], T], stalled: Callable[[], None]) -> T:
    """``call()`` on a thread of its own, waited for until ``deadline`` (``time.monotonic``); past it, ``stalled()``
    (which closes the client ``call`` uses) and ``Stalled``."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="onetool-code request", daemon=True).start()
    if not done.wait(max(deadline - time.monotonic(), 0.0)):
        stalled()
        raise Stalled
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# The most an answer may hold unless its request says more: a ranking or a query's vectors take kilobytes.
ANSWER_BYTES = 4 << 20
_limit: ContextVar[int] = ContextVar("onetool_code_answer_bytes", default=ANSWER_BYTES)


@contextlib.contextmanager
def bounded(limit: int) -> Iterator[None]:
    """The answers of the requests made inside the block, on this thread, are read up to ``limit`` bytes."""
    token = _limit.set(limit)
    try:
        yield
    finally:
        _limit.reset(token)


def read_bounded(response: Any) -> None:
    """An HTTP client's response hook (``httpx``, or ``httpx2`` under ``openai`` 3): read the body, decoded, up to
    the bound, and ``TooLarge`` past it, before the client reads it whole.

    The body read is handed to the client as ``_content``, which ``Response.read()`` returns when it is set
    (httpx 0.28, httpx2 2.16): the one private name, since no public one keeps a response readable once its
    stream is consumed. ``tests/test_embeddings.py`` holds an answer to the bound through the real clients.
    """
    limit = _limit.get()
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        response.close()
        raise TooLarge(limit)
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            response.close()
            raise TooLarge(limit)
    response._content = bytes(body)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def too_large(exc: BaseException) -> TooLarge | None:
    """The bound an answer went past, when that is why a request failed: ``openai`` 1 and 2 wrap whatever a
    response hook raises in their ``APIConnectionError`` (``openai`` 3 lets it through)."""
    return next((e for e in _causes(exc) if isinstance(e, TooLarge)), None)


def refused(exc: BaseException) -> bool:
    """Nothing listens there, or the name does not resolve: asking again cannot help."""
    import socket

    return any(isinstance(e, (ConnectionRefusedError, socket.gaierror)) for e in _causes(exc))


def reason(exc: BaseException) -> str:
    """Why a request failed, in words that cannot carry the request: the operating system's reason when there
    is one (``Connection refused``), else the kind of failure (``RemoteProtocolError``)."""
    for e in _causes(exc):
        if isinstance(e, OSError) and e.strerror:
            return str(e.strerror)
    innermost = list(_causes(exc))[-1]
    return type(innermost).__name__


def unreachable(url: str, deadline: float) -> str | None:
    """Why nothing can be asked at ``url`` (nothing listens there, or its name does not resolve), found by one
    TCP connection, or None. A fresh process imports its HTTP client for half a second before it can learn that
    a local server is stopped; this answers in a millisecond. Through a proxy the server is not dialled at all,
    so then nothing is said."""
    import socket
    import urllib.request

    parts = urlsplit(url)
    if urllib.request.getproxies():
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=max(deadline - time.monotonic(), 0.001)).close()
    except OSError as exc:
        return reason(exc) if refused(exc) else None
    return None


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port


class Clients:
    """The process's clients, one per slot (a server, or a server and a key): kept across searches, closed when a
    request of theirs stalls (the next request builds a new one) and at exit, else the interpreter warns of open
    sockets."""

    def __init__(self) -> None:
        self._held: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        atexit.register(self.close_all)

    def get(self, slot: Hashable, make: Callable[[], Any]) -> Any:
        with self._lock:
            client = self._held.get(slot)
            if client is None:
                client = self._held[slot] = make()
            return client

    def discard(self, slot: Hashable, client: Any = None) -> None:
        """Close the slot's client: ``client`` only, when given (a request of it stalled; another thread may
        have put a new one there since, which is not to be cut off)."""
        with self._lock:
            held = self._held.get(slot)
            if held is None or (client is not None and held is not client):
                return
            del self._held[slot]
        held.close()

    def close_all(self) -> None:
        for slot in self.slots():
            self.discard(slot)

    def slots(self) -> list[Hashable]:
        with self._lock:
            return list(self._held)


_clients = Clients()


def post(url: str, *, deadline: float, limit: int = ANSWER_BYTES, **options: Any) -> Any:
    """``httpx``'s POST to ``url`` within ``deadline``, its answer read up to ``limit`` bytes; ``Stalled`` past the
    deadline, ``TooLarge`` past the limit, ``httpx``'s errors otherwise."""
    slot = origin(url)
    client = _client(slot)
    timeout = max(deadline - time.monotonic(), 0.001)

    def send() -> Any:
        with bounded(limit):
            return client.post(url, timeout=timeout, **options)

    return within(deadline, send, lambda: _clients.discard(slot, client))


def _client(slot: tuple[str, str, int | None]) -> Any:
    """The process's ``httpx`` client for one server (VoyageAI and the rerankers; the key travels per request)."""
    import httpx

    return _clients.get(slot, lambda: httpx.Client(event_hooks={"response": [read_bounded]}))
