"""The meaning of the checkout's own chunks: the chunks laid over the index from files changed since indexing
(``index`` lays them) embedded with the index's model, so that the semantic ranking meets them as the index's own.

Each chunk is embedded once per machine: its vector is kept in the cache directory by the model and the xxh3 of
its code (what ChunkHound sends to the provider is the chunk's code alone), so the next search, or the next
process, reads it back. A search sends at most one request, of up to ``BATCH`` chunks, within its network budget:
a branch far from its index is embedded over a few searches, never by one search that waits on thousands. The
chunks not embedded yet rank by words and names, and the answer says how many. A provider that failed such a
request is left alone for ``REST_SECONDS``: a slow one would otherwise hold every search for its whole timeout.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

import numpy as np
import xxhash

from onetool_code import index
from onetool_code.errors import EmbeddingError, MissingKeyError
from onetool_code.search import embeddings, transport
from onetool_code.settings import Settings, cache_root
from onetool_code.spans import note

FOLDER = "checkout-vectors"
# Inputs per request: OpenAI takes at most 2,048 and 300,000 tokens in one; a chunk is at most about 400 tokens
# (ChunkHound's 1,200 non-whitespace characters).
BATCH = 500
REST_SECONDS = 60.0

_failed: dict[Path, float] = {}  # a model's vector folder -> when a request of its checkout chunks last failed
_failed_lock = threading.Lock()
# The vectors last read or made, also held in memory: an overlay made again after a save (each file's chunks cut
# anew) reads none of its other chunks' vectors back from disk (50 files: 430 files, 47 ms). 32 MiB: 5,000
# vectors of 1,536 dimensions, a 500-file overlay's.
RECENT_BYTES = 32 * 1024 * 1024
_recent: OrderedDict[Path, np.ndarray] = OrderedDict()
_recent_bytes = 0
_recent_lock = threading.Lock()


def joined(
    settings: Settings, view: index.View, chosen: index.EmbeddingSet, network: transport.Budget
) -> tuple[index.View, str | None]:
    """``view`` with the vectors of ``chosen`` its laid-over chunks have (kept, or embedded now); a notice for
    those still without one."""
    texts = view.unembedded(chosen)
    if not texts:
        return view, None
    folder = _folder(chosen)
    vectors: list[np.ndarray | None] = [_kept(folder, text, chosen.dims) for text in texts]
    missing = [i for i, vector in enumerate(vectors) if vector is None]
    failure = _embed(settings, chosen, folder, [(i, texts[i]) for i in missing[:BATCH]], vectors, network)
    found = [i for i, vector in enumerate(vectors) if vector is not None]
    if found:
        view = view.embedded(chosen, found, np.stack([vectors[i] for i in found]))  # type: ignore[misc]
    left = len(texts) - len(found)
    if not left:
        return view, None
    counted = f"{left:,} of the checkout's changed chunks {'has' if left == 1 else 'have'} no vector yet"
    if failure:
        return view, f"{counted} ({failure}): they rank by words and names"
    return view, f"{counted}: they rank by words and names until the next searches embed them"


def _embed(
    settings: Settings,
    chosen: index.EmbeddingSet,
    folder: Path,
    sent: list[tuple[int, str]],
    vectors: list[np.ndarray | None],
    network: transport.Budget,
) -> str | None:
    """Embed ``sent`` (positions and codes) in one request, filling and keeping their vectors; why not, if not."""
    if not sent:
        return None
    with _failed_lock:
        failed = _failed.get(folder)
    if failed is not None and time.monotonic() - failed < REST_SECONDS:
        return "the provider failed them a moment ago"
    try:
        fresh = embeddings.embed([text for _, text in sent], replace(settings, model=chosen.model), budget=network)
    except (MissingKeyError, EmbeddingError) as exc:
        note(f"the checkout's changed chunks were not embedded: {exc}")
        with _failed_lock:
            _failed[folder] = time.monotonic()
        return "they could not be embedded now"
    if fresh.shape[1] != chosen.dims:
        return f"their vectors came back with {fresh.shape[1]} dimensions, not the index's {chosen.dims}"
    with _failed_lock:
        _failed.pop(folder, None)
    for (i, text), vector in zip(sent, fresh, strict=True):
        vectors[i] = vector
        _keep(folder, text, vector)
    return None


def _folder(chosen: index.EmbeddingSet) -> Path:
    model = f"{chosen.provider}/{chosen.model}/{chosen.dims}"
    return cache_root() / FOLDER / hashlib.sha256(model.encode()).hexdigest()[:16]


def _name(folder: Path, text: str) -> Path:
    return folder / f"{xxhash.xxh3_128_hexdigest(text.encode())}.npy"


def _kept(folder: Path, text: str, dims: int) -> np.ndarray | None:
    name = _name(folder, text)
    with _recent_lock:
        vector = _recent.get(name)
        if vector is not None:
            _recent.move_to_end(name)
            return vector
    try:
        vector = np.load(name)
    except (OSError, ValueError, EOFError):
        return None
    if vector.shape != (dims,) or vector.dtype != np.float32:
        return None
    _remember(name, vector)
    return vector


def _remember(name: Path, vector: np.ndarray) -> None:
    """Held in memory too, the most recent first out last, up to ``RECENT_BYTES``."""
    global _recent_bytes
    with _recent_lock:
        if name not in _recent:
            _recent_bytes += vector.nbytes
        _recent[name] = vector
        while _recent_bytes > RECENT_BYTES:
            _recent_bytes -= _recent.popitem(last=False)[1].nbytes


def _keep(folder: Path, text: str, vector: np.ndarray) -> None:
    """Written whole or not at all (another process may read it at once); a cache that cannot be written is
    only slower."""
    target = _name(folder, text)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{target.stem}.{os.getpid()}.part")
        with part.open("wb") as out:
            np.save(out, np.asarray(vector, dtype=np.float32))
        part.replace(target)
        _remember(target, np.asarray(vector, dtype=np.float32))
    except OSError as exc:
        note(f"a checkout chunk's vector was not kept: {exc}")
