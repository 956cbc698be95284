"""Vectors as the unit rows DuckDB's cosine sees: normalised in float64, with the rows it cannot score told apart
(NULL vectors, vectors holding NULLs, zero or non-finite ones)."""

from __future__ import annotations

import numpy as np
import xxhash


def units(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query vectors as float32 unit rows (normalised in float64), and which of them have a direction."""
    queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32)).astype(np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
    scorable = np.isfinite(norms) & (norms > 0)
    units = np.zeros_like(queries, dtype=np.float32)
    units[scorable] = queries[scorable] / norms[scorable, np.newaxis]
    return units, scorable


def stacked(columns: dict[str, np.ndarray], dims: int) -> dict[str, np.ndarray]:
    """A window's columns (``database.vector_window``) with its vectors, one array each as DuckDB returns them, as
    one float32 block of rows as stored (``block``; zeros for NULL vectors and those holding NULLs, which ``null``
    and ``broken`` mark) in place of ``embedding``. Done on the thread that reads the window: its thousands of
    objects are made and let go there, while the last window's arithmetic lets go of the GIL."""
    embeddings = columns.pop("embedding")
    block = columns["block"] = np.empty((len(embeddings), dims), dtype=np.float32)
    columns["null"], columns["broken"] = copied(block, embeddings)
    return columns


def fill(block: np.ndarray, null: np.ndarray, broken: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Make ``block`` (``stacked``) unit rows in place; return its NaN-cosine rows, and the digests of the vectors as
    stored (``digests``)."""
    digested = digests(block, null, broken)
    n = block.shape[0]
    # Norms in float64: DuckDB scores vectors whose squares would overflow or vanish in float32 (measured:
    # [1e30, 1e30] and [1e-20, 1e-20] both get their true cosine).
    norms = np.empty(n, dtype=np.float64)
    for start in range(0, n, 1024):  # einsum casts its operands to float64: in slices, so the copy stays small
        part = block[start : start + 1024]
        norms[start : start + 1024] = np.sqrt(np.einsum("ij,ij->i", part, part, dtype=np.float64))
    usable = np.isfinite(norms) & (norms > 0) & ~null & ~broken
    np.divide(block, np.where(usable, norms, 1.0)[:, np.newaxis], out=block, casting="same_kind")  # no ``where=``:
    # numpy's masked division is 1.6x slower
    block[~usable] = 0.0
    return ~usable & ~null & ~broken, digested


def copied(block: np.ndarray, embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copy vectors as stored into ``block`` (zeros for NULL ones and those holding NULLs); return which those
    are."""
    n = len(embeddings)
    null = np.ma.getmaskarray(embeddings)
    values = np.ma.getdata(embeddings)
    broken = np.fromiter((np.ma.isMaskedArray(v) and bool(np.ma.getmaskarray(v).any()) for v in values), bool, n)
    if null.any() or broken.any():
        for i in range(n):
            block[i] = 0.0 if null[i] or broken[i] else np.ma.getdata(values[i])
    elif n:
        np.stack(values, out=block)
    return null, broken


# What a NULL vector and one holding NULLs digest to: no stored float32 row hashes to them but by a 2**-64 chance.
NULL_DIGEST, BROKEN_DIGEST = 0x6E756C6C, 0x62726F6B


def digests(block: np.ndarray, null: np.ndarray, broken: np.ndarray) -> np.ndarray:
    """The xxh3-64 of each stored vector's float32 bytes: what tells a row DuckDB moved unchanged from one whose
    vector changed (about 12 ms per 16,384 x 1536; DuckDB's ``hash`` of the same rows doubled the first read's
    SQL)."""
    out = np.fromiter(map(xxhash.xxh3_64_intdigest, np.ascontiguousarray(block)), np.uint64, block.shape[0])
    out[null] = NULL_DIGEST
    out[broken] = BROKEN_DIGEST
    return out
