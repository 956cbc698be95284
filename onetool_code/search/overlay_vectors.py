"""The meaning of the checkout's own chunks: the chunks laid over the index from files changed since indexing
(``index`` lays them) embedded with the index's model, so that the semantic ranking meets them as the index's own.

Each chunk is embedded once per machine: its vector is kept in the cache directory by the model and the xxh3 of
its code (what ChunkHound sends to the provider is the chunk's code alone), so the next search, or the next
process, reads it back. The ones not kept go out together (one request up to ``BATCH``), within the search's
network budget. When the
provider does not answer, they are ranked by words and names only, and the answer says so.
"""

from __future__ import annotations

import hashlib
import os
import threading
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
    """``view`` with its laid-over chunks' vectors of ``chosen``; a notice instead when they could not be had."""
    texts = view.unembedded(chosen)
    if not texts:
        return view, None
    folder = _folder(chosen)
    vectors: list[np.ndarray | None] = [_kept(folder, text, chosen.dims) for text in texts]
    missing = [i for i, vector in enumerate(vectors) if vector is None]
    if missing:
        try:
            model = replace(settings, model=chosen.model)
            fresh = embeddings.embed([texts[i] for i in missing], model, batch_size=BATCH, budget=network)
        except (MissingKeyError, EmbeddingError) as exc:
            note(f"the checkout's changed chunks were not embedded: {exc}")
            return view, "their meaning is not in the index and could not be embedded now: ranked by words and names"
        if fresh.shape[1] != chosen.dims:
            return view, f"their vectors came back with {fresh.shape[1]} dimensions, not the index's {chosen.dims}"
        for i, vector in zip(missing, fresh, strict=True):
            vectors[i] = vector
            _keep(folder, texts[i], vector)
    return view.embedded(chosen, np.stack(vectors)), None  # type: ignore[arg-type]


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
