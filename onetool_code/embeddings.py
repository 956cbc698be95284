"""One batched embeddings request through the official ``openai`` client; its errors become ours.

Every query text of a call goes in a single request (``search_batch`` included). The client retries 429 and
5xx answers itself, at most ``MAX_RETRIES`` times with its own backoff.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    import openai

    key, key_source = config.api_key(settings)
    if key is None and settings.base_url is None:
        raise MissingKeyError(MISSING_KEY)
    client = openai.OpenAI(
        api_key=str(key) if key else _PLACEHOLDER_KEY,
        base_url=settings.base_url,
        timeout=settings.timeout,
        max_retries=MAX_RETRIES,
    )
    step = batch_size or max(len(texts), 1)
    rows: list[np.ndarray] = []
    try:
        for start in range(0, len(texts), step):
            rows.extend(_request(client, list(texts[start : start + step]), settings, key_source))
    finally:
        client.close()
    return np.vstack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def _request(client: object, texts: list[str], settings: Settings, key_source: str) -> list[np.ndarray]:
    import openai

    where = settings.base_url or "api.openai.com"
    try:
        response = client.embeddings.create(model=settings.model, input=texts)  # type: ignore[attr-defined]
    except openai.AuthenticationError as exc:
        if settings.base_url_from_project and key_source == "none":
            raise EmbeddingError(
                f"The embeddings API at {where} wants an API key (401). That server is named only by the "
                f"project's {PROJECT_CONFIG}, so your own {KEY_NAME} is not sent to it (a repository must not "
                "be able to collect keys). If you trust it, name it in your own settings (base_url=..., "
                '--base-url, tools.code.base_url or CHUNKHOUND_EMBEDDING__BASE_URL). mode="lexical" searches '
                "without a key."
            ) from exc
        raise EmbeddingError(
            f"The embeddings API at {where} rejected the API key (401). Check {KEY_NAME} ({key_source})."
        ) from exc
    except openai.RateLimitError as exc:
        raise EmbeddingError(
            f"The embeddings API at {where} is rate limiting requests (429), still after {MAX_RETRIES} retries. "
            "Wait and try again."
        ) from exc
    except openai.APITimeoutError as exc:
        raise EmbeddingError(
            f"The embeddings API at {where} did not answer within {settings.timeout:g} s (tried {MAX_RETRIES + 1} times)."
        ) from exc
    except openai.APIConnectionError as exc:
        raise EmbeddingError(f"Cannot reach the embeddings API at {where}: {exc.__cause__ or exc}") from exc
    except openai.NotFoundError as exc:
        raise EmbeddingError(f"The embeddings API at {where} does not know model {settings.model!r} (404).") from exc
    except openai.APIStatusError as exc:
        raise EmbeddingError(f"The embeddings API at {where} answered HTTP {exc.status_code}: {_message(exc)}") from exc
    except (openai.APIResponseValidationError, AttributeError, TypeError, ValueError) as exc:
        # A 200 whose body is not an embeddings list (an HTML error page from a proxy, say) fails inside the
        # client's own parsing with whatever error that happens to raise.
        raise EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.") from exc
    data = getattr(response, "data", None)
    if not isinstance(data, list) or len(data) != len(texts):
        raise EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.")
    try:
        ordered = sorted(data, key=lambda item: item.index)
        return [np.asarray(item.embedding, dtype=np.float32) for item in ordered]
    except (AttributeError, TypeError, ValueError) as exc:
        raise EmbeddingError(f"The embeddings API at {where} sent a response that is not an embeddings list.") from exc


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
    return str(exc)[:200]
