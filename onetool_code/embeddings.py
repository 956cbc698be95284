"""One batched embeddings request through the official ``openai`` client; its errors become ours.

Every query text of a call goes in a single request (``search_batch`` included). ``timeout`` is the budget of
the whole request, retries included: 429, 5xx and connection failures are retried at most ``MAX_RETRIES``
times while time is left, so a server that accepts and never answers costs the timeout, not three of them.
A client is built once per (base URL, key) and process: building one costs ~40 ms (an SSL context), more
than a warm search.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from onetool_code import settings as config
from onetool_code.errors import EmbeddingError, MissingKeyError
from onetool_code.settings import KEY_NAME, MAX_RETRIES, PROJECT_CONFIG, Settings

# A custom OpenAI-compatible server (a local model, a proxy) usually needs no key, but the client insists on one.
_PLACEHOLDER_KEY = "not-needed"

MISSING_KEY = (
    f"{KEY_NAME} not configured in secrets.yaml (required for code search embeddings). "
    'Add it to secrets.yaml, or set the OPENAI_API_KEY environment variable; mode="lexical" searches without one.'
)


def embed(texts: Sequence[str], settings: Settings, *, batch_size: int | None = None) -> np.ndarray:
    """Vectors for ``texts`` as a float32 matrix, one row per text, in order.

    One request for everything unless ``batch_size`` is given (the indexer's bulk loads).
    """
    key, key_source = config.api_key(settings)
    if key is None and settings.base_url is None:
        raise MissingKeyError(MISSING_KEY)
    client = _client(settings.base_url, str(key) if key else _PLACEHOLDER_KEY)
    step = batch_size or max(len(texts), 1)
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), step):
        rows.extend(_request(client, list(texts[start : start + step]), settings, key_source))
    return np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


_clients: dict[tuple[str | None, str], Any] = {}
_clients_lock = threading.Lock()
BACKOFF_SECONDS = (0.5, 1.0)  # before the first and the second retry


def _client(base_url: str | None, key: str) -> Any:
    """The process's client for this server and key (the key is kept by its hash, not as a dict key)."""
    import openai

    slot = (base_url, hashlib.sha256(key.encode()).hexdigest())
    with _clients_lock:
        client = _clients.get(slot)
        if client is None:
            client = _clients[slot] = openai.OpenAI(api_key=key, base_url=base_url, max_retries=0)
        return client


def _request(client: Any, texts: list[str], settings: Settings, key_source: str) -> list[np.ndarray]:
    import openai

    where = settings.base_url or "api.openai.com"
    deadline = time.monotonic() + settings.timeout
    attempts = 0
    while True:
        attempts += 1
        try:
            response = client.embeddings.create(
                model=settings.model, input=texts, timeout=max(deadline - time.monotonic(), 0.001)
            )
            break
        except openai.APITimeoutError as exc:
            tried = f"tried {attempts} time{'s' if attempts > 1 else ''}"
            raise EmbeddingError(
                f"The embeddings API at {where} did not answer within {settings.timeout:g} s ({tried})."
            ) from exc
        except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError) as exc:
            wait = BACKOFF_SECONDS[attempts - 1] if attempts <= MAX_RETRIES else None
            if wait is None or time.monotonic() + wait >= deadline:
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


def _failure(exc: Exception, where: str, settings: Settings, key_source: str, attempts: int) -> EmbeddingError:
    """Our message for a failed request: what happened and what to do."""
    import openai

    if isinstance(exc, openai.AuthenticationError):
        if settings.base_url_from_project and key_source == "none":
            return EmbeddingError(
                f"The embeddings API at {where} wants an API key (401). That server is named only by the "
                f"project's {PROJECT_CONFIG}, so your own {KEY_NAME} is not sent to it (a repository must not "
                "be able to collect keys). If you trust it, name it in your own settings (base_url=..., "
                '--base-url, tools.code.base_url or CHUNKHOUND_EMBEDDING__BASE_URL). mode="lexical" searches '
                "without a key."
            )
        return EmbeddingError(
            f"The embeddings API at {where} rejected the API key (401). Check {KEY_NAME} ({key_source})."
        )
    retries = f"{attempts - 1} {'retry' if attempts == 2 else 'retries'}"
    if isinstance(exc, openai.RateLimitError):
        return EmbeddingError(
            f"The embeddings API at {where} is rate limiting requests (429), still after {retries}. Wait and try again."
        )
    if isinstance(exc, openai.APIConnectionError):
        return EmbeddingError(f"Cannot reach the embeddings API at {where}: {exc.__cause__ or exc}")
    if isinstance(exc, openai.NotFoundError):
        return EmbeddingError(f"The embeddings API at {where} does not know model {settings.model!r} (404).")
    if isinstance(exc, openai.APIStatusError):
        return EmbeddingError(f"The embeddings API at {where} answered HTTP {exc.status_code}: {_message(exc)}")
    return EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.")


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
    return str(exc)[:200]
