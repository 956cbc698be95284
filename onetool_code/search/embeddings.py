"""One batched embeddings request to the provider the index was built with; its errors become ours.

- OpenAI (and any OpenAI-compatible server): the official ``openai`` client.
- VoyageAI: its REST API over ``httpx`` (``openai``'s own HTTP client, so nothing new is installed), sent as
  ChunkHound 6.1.0's provider sends it through the ``voyageai`` SDK: ``input_type: "document"`` for every text,
  a search query included (so ``semantic`` keeps ChunkHound's order), ``truncation: true``, vectors as
  base64 float32, and ``output_dimension`` when ``embedding.output_dims`` asks the API to shorten them.

With ``embedding.client_side_truncation`` the model's full vectors are cut to ``output_dims`` and scaled back to
unit length here, as ChunkHound does. Every query text of a call goes in a single request (``search_batch``
included). ``timeout`` bounds the whole request, retries included, and every byte of it (``transport.within``: a
server that trickles its answer is cut off): 429, 5xx and broken connections are retried at most
``MAX_RETRIES`` times while time is left; a refused connection or a name that does not resolve is not, so a
stopped local server costs hybrid nothing. An answer is read up to ``answer_limit`` of its texts, then refused
(``transport.read_bounded``), from the user's server and a repository's alike. A client is built once per process
(per base URL and key for ``openai``): building one costs ~40 ms (an SSL context), more than a warm search.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from onetool_code import advice
from onetool_code import settings as config
from onetool_code.errors import EmbeddingError, MissingKeyError, Stalled, TooLarge
from onetool_code.search import transport
from onetool_code.settings import MAX_RETRIES, PROJECT_CONFIG, Settings

# A custom server (a local model, a proxy) usually needs no key, but the clients insist on one.
_PLACEHOLDER_KEY = "not-needed"
# What one vector may take in an answer: 8,192 dimensions written as JSON numbers of up to 32 characters (base64
# float32 takes a sixth of it). An answer is read up to this per text, and never less than ``ANSWER_BYTES``.
VECTOR_BYTES = 256 << 10


def answer_limit(count: int) -> int:
    """The bytes an answer of ``count`` vectors may hold (``transport.read_bounded``)."""
    return max(transport.ANSWER_BYTES, count * VECTOR_BYTES)


def missing_key(settings: Settings, instead: str | None = None) -> str:
    """``instead``: what works without a key where the caller is (a search in words, by default)."""
    instead = instead or f"{advice.option('mode', 'lexical')} searches without one."
    return (
        f"{settings.key_name} not configured in secrets.yaml (required for code search embeddings). "
        f"Add it to secrets.yaml, or set the {settings.key_name} environment variable; {instead}"
    )


def warm_up(settings: Settings) -> None:
    """Import the client ``embed`` will use on a background thread, while the search reads the index.

    ``openai`` and what it imports cost a fresh process 0.5 s, over 1 s when the page cache has let their files
    go (a search after a few idle minutes on these VMs): as much as a whole warm search. DuckDB and numpy let go
    of the GIL while they read, so the import overlaps them; ``embed``'s own import then finds it done, or waits
    for it to finish.
    """
    name = "httpx" if settings.provider == "voyageai" else "openai"
    if name not in sys.modules:
        threading.Thread(target=_import, args=(name,), name="onetool-code import", daemon=True).start()


_importing = threading.Lock()  # held while ``warm_up``'s thread imports a client


def _import(name: str) -> None:
    with _importing, contextlib.suppress(ImportError):  # the search's own import says so, in its place
        importlib.import_module(name)


def embed(
    texts: Sequence[str],
    settings: Settings,
    *,
    batch_size: int | None = None,
    budget: transport.Budget | None = None,
    input_type: str | None = None,
) -> np.ndarray:
    """Vectors for ``texts`` as a float32 matrix, one row per text, in order.

    One request for everything unless ``batch_size`` is given (the indexer's bulk loads, each batch with a
    timeout of its own). ``budget``: the search's time on the network, shared with its reranking. ``input_type``:
    what the texts are to an asymmetric model (``query``), sent as the request's ``input_type``; None sends what
    ChunkHound sends (nothing to OpenAI, ``document`` to VoyageAI). Vectors holding NaN or Infinity, or only
    zeros, are an ``EmbeddingError``: none is ranked by nor written to an index.
    """
    if settings.unusable is not None:
        raise EmbeddingError(settings.unusable)
    key, key_source = config.api_key(settings)
    if key is None and settings.base_url is None:
        raise MissingKeyError(missing_key(settings))
    request = _voyage_request if settings.provider == "voyageai" else _openai_request
    client = "httpx" if settings.provider == "voyageai" else "openai"
    if client not in sys.modules or _importing.locked():
        # Its client is still being imported (a fresh process): first learn, in a millisecond, whether anything
        # listens there at all; a stopped local server then costs hybrid nothing.
        stopped = transport.unreachable(settings.endpoint, (budget or transport.Budget(settings.timeout)).deadline())
        if stopped is not None:
            raise EmbeddingError(
                f"Cannot reach the embeddings API at {settings.base_url or 'api.openai.com'}: {stopped}"
            )
    step = batch_size or max(len(texts), 1)
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), step):
        batch = list(texts[start : start + step])
        limit = budget or transport.Budget(settings.timeout)
        rows.extend(request(batch, settings, str(key or _PLACEHOLDER_KEY), key_source, limit.deadline(), input_type))
    vectors = np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    if vectors.size and not (np.isfinite(vectors).all() and np.abs(vectors).max(axis=1).all()):
        # The cosine of a vector holding NaN, or of zeros, is NaN, which DuckDB sorts first: every chunk would tie
        # at the top, in path order.
        where = settings.endpoint if settings.provider == "voyageai" else settings.base_url or "api.openai.com"
        raise EmbeddingError(
            f"The embeddings API at {where} sent vectors holding NaN or Infinity, or only zeros: its model is "
            f"broken. Check the server; {advice.option('mode', 'lexical')} searches without it."
        )
    if settings.client_side_truncation and settings.output_dims is not None and vectors.size:
        if vectors.shape[1] < settings.output_dims:
            raise EmbeddingError(
                f"{settings.provider}/{settings.model} returned {vectors.shape[1]}-dimensional vectors, fewer than "
                f"embedding.output_dims ({settings.output_dims})."
            )
        cut = vectors[:, : settings.output_dims].astype(np.float64)
        norms = np.linalg.norm(cut, axis=1, keepdims=True)
        vectors = (cut / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return vectors


def _server_dims(settings: Settings) -> int | None:
    """The dimensions to ask the API for: ``output_dims``, unless they are cut here."""
    return None if settings.client_side_truncation else settings.output_dims


_clients = transport.Clients()
BACKOFF_SECONDS = (0.5, 1.0)  # before the first and the second retry


def _openai_request(
    texts: list[str], settings: Settings, key: str, key_source: str, deadline: float, input_type: str | None
) -> list[np.ndarray]:
    import openai

    where = settings.base_url or "api.openai.com"
    slot = (settings.base_url, hashlib.sha256(key.encode()).hexdigest())
    dims = _server_dims(settings)
    attempts = 0
    while True:
        attempts += 1
        client = _client(slot, key)
        timeout = max(deadline - time.monotonic(), 0.001)

        def create(client: Any = client, timeout: float = timeout) -> Any:
            extra: dict[str, Any] = {"dimensions": dims} if dims is not None else {}
            if input_type is not None:  # not a field of OpenAI's own API: servers of asymmetric models take it
                extra["extra_body"] = {"input_type": input_type}
            with transport.bounded(answer_limit(len(texts))):
                return client.embeddings.create(model=settings.model, input=texts, timeout=timeout, **extra)

        try:
            response = transport.within(deadline, create, lambda held=client: _clients.discard(slot, held))
            break
        except (Stalled, openai.APITimeoutError) as exc:
            raise _timed_out(where, settings, attempts) from exc
        except TooLarge as exc:
            raise _too_large(where, len(texts), exc) from exc
        except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
            if (past := transport.too_large(exc)) is not None:  # openai 1 and 2: not a connection to retry
                raise _too_large(where, len(texts), past) from exc
            wait = BACKOFF_SECONDS[attempts - 1] if attempts <= MAX_RETRIES else None
            if wait is None or transport.refused(exc) or time.monotonic() + wait >= deadline:
                raise _failure(exc, where, settings, key_source, attempts) from exc
            time.sleep(wait)
        except openai.OpenAIError as exc:
            raise _failure(exc, where, settings, key_source, attempts) from exc
        except (AttributeError, TypeError, ValueError) as exc:
            # A 200 whose body is not an embeddings list (an HTML error page from a proxy, say) fails inside the
            # client's own parsing with whatever error that happens to raise.
            raise EmbeddingError(
                f"The embeddings API at {where} sent a response that is not an embeddings list."
            ) from exc
    data = getattr(response, "data", None)
    if not isinstance(data, list) or len(data) != len(texts):
        raise EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.")
    try:
        ordered = sorted(data, key=lambda item: item.index)
        return [np.asarray(item.embedding, dtype=np.float32) for item in ordered]
    except (AttributeError, TypeError, ValueError) as exc:
        raise EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.") from exc


def _client(slot: tuple[str | None, str], key: str) -> Any:
    """The process's client for this server and key (the key is kept by its hash, not as a slot). Its HTTP client
    is ours, to read answers up to their bound; unlike the one ``openai`` makes, it is not closed when dropped, so
    the pool closes it."""
    import openai

    def make() -> Any:
        http = openai.DefaultHttpxClient(event_hooks={"response": [transport.read_bounded]})
        return openai.OpenAI(api_key=key, base_url=slot[0], max_retries=0, http_client=http)

    return _clients.get(slot, make)


def _timed_out(where: str, settings: Settings, attempts: int) -> EmbeddingError:
    tried = f"tried {attempts} time{'s' if attempts > 1 else ''}"
    return EmbeddingError(f"The embeddings API at {where} did not answer within {settings.timeout:g} s ({tried}).")


def _too_large(where: str, count: int, exc: TooLarge) -> EmbeddingError:
    vectors = f"{count} vector{'s' if count != 1 else ''}"
    return EmbeddingError(
        f"The embeddings API at {where} sent {exc} for {vectors}, more than vectors can take. Check that it is an "
        "embeddings API."
    )


def _failure(exc: Exception, where: str, settings: Settings, key_source: str, attempts: int) -> EmbeddingError:
    """Our message for a failed ``openai`` request."""
    import openai

    if isinstance(exc, openai.APIConnectionError):
        return EmbeddingError(f"Cannot reach the embeddings API at {where}: {transport.reason(exc)}")
    if isinstance(exc, openai.APIStatusError):
        return _status_failure(
            exc.status_code, _message(getattr(exc, "body", None), exc), where, settings, key_source, attempts
        )
    return EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.")


def _status_failure(
    status: int, message: str, where: str, settings: Settings, key_source: str, attempts: int
) -> EmbeddingError:
    """Our message for an HTTP error answer: what happened and what to do."""
    if status == 401:
        if settings.base_url_from_project and key_source == "none":
            return EmbeddingError(
                f"The embeddings API at {where} wants an API key (401). That server is named only by the "
                f"project's {PROJECT_CONFIG}, so your own {settings.key_name} is not sent to it (a repository must "
                "not be able to collect keys). If you trust it, name it in your own settings (base_url=..., "
                f"--base-url, tools.code.base_url or CHUNKHOUND_EMBEDDING__BASE_URL). {advice.option('mode', 'lexical')} "
                "searches without a key."
            )
        return EmbeddingError(
            f"The embeddings API at {where} rejected the API key (401). Check {settings.key_name} ({key_source})."
        )
    retries = f"{attempts - 1} {'retry' if attempts == 2 else 'retries'}"
    if status == 429:
        return EmbeddingError(
            f"The embeddings API at {where} is rate limiting requests (429), still after {retries}. Wait and try again."
        )
    if status == 404:
        return EmbeddingError(f"The embeddings API at {where} does not know model {settings.model!r} (404).")
    return EmbeddingError(f"The embeddings API at {where} answered HTTP {status}: {message}")


def _message(body: object, fallback: object) -> str:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
        if isinstance(body.get("detail"), str):  # VoyageAI's error body
            return str(body["detail"])[:200]
    return str(fallback)[:200]


# -- VoyageAI ----------------------------------------------------------------------------------------------------


def _voyage_request(
    texts: list[str], settings: Settings, key: str, key_source: str, deadline: float, input_type: str | None
) -> list[np.ndarray]:
    import httpx

    where = settings.endpoint
    body: dict[str, Any] = {
        "input": texts,
        "model": settings.model,
        "input_type": input_type or "document",
        "truncation": True,
        "encoding_format": "base64",
    }
    if _server_dims(settings) is not None:
        body["output_dimension"] = _server_dims(settings)
    attempts = 0
    while True:
        attempts += 1
        try:
            response = transport.post(
                f"{where}/embeddings",
                json=body,
                headers={"Authorization": f"Bearer {key}"},
                deadline=deadline,
                limit=answer_limit(len(texts)),
            )
        except (Stalled, httpx.TimeoutException) as exc:
            raise _timed_out(where, settings, attempts) from exc
        except TooLarge as exc:
            raise _too_large(where, len(texts), exc) from exc
        except httpx.TransportError as exc:
            failure = EmbeddingError(f"Cannot reach the embeddings API at {where}: {transport.reason(exc)}")
            if transport.refused(exc):
                raise failure from exc
        else:
            if response.status_code == 200:
                return _voyage_vectors(response, where, len(texts))
            message = _message(_json(response), response.text)
            failure = _status_failure(response.status_code, message, where, settings, key_source, attempts)
            if response.status_code != 429 and response.status_code < 500:
                raise failure
        wait = BACKOFF_SECONDS[attempts - 1] if attempts <= MAX_RETRIES else None
        if wait is None or time.monotonic() + wait >= deadline:
            raise failure
        time.sleep(wait)


def _json(response: Any) -> object:
    try:
        return response.json()
    except ValueError:
        return None


def _voyage_vectors(response: Any, where: str, count: int) -> list[np.ndarray]:
    data = _json(response)
    items = data.get("data") if isinstance(data, dict) else None
    not_a_list = EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.")
    if not isinstance(items, list) or len(items) != count:
        raise not_a_list
    try:
        ordered = sorted(items, key=lambda item: int(item["index"]))
        return [
            np.frombuffer(base64.b64decode(e), dtype="<f4").astype(np.float32)
            if isinstance(e := item["embedding"], str)
            else np.asarray(e, dtype=np.float32)
            for item in ordered
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise not_a_list from exc
