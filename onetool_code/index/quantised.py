"""The int8 copy of a snapshot's vectors: what a semantic search scans, a quarter of float32's bytes, with a
bound on its error that lets a few float32 rows, read by index, give the exact order of ChunkHound's SQL.

Each unit row ``x`` is stored as ``s * q + e``: ``q`` int8 codes, ``s = max|x| / 127`` its scale and ``e`` what
rounding left. A query ``u`` is split the same way into ``t * p + f``. Then, exactly (Cauchy-Schwarz twice)::

    u . x = s t (p . q) + s (f . q) + u . e,    |s (f . q)| <= s |q| |f|,    |u . e| <= |u| |e|

``p . q`` is an integer sum (a SIMD int8 kernel, exact in int32), so every row's cosine lies within
``[estimate - slack, estimate + slack]`` with ``slack = |u| |e| + s |q| |f|``, both norms kept per row at the
build. The rows whose upper bound reaches the k-th best lower bound hold the page for certain; they are
rescored from float32, best upper bound first, until no row left could still enter the page. On OpenAI-like
unit vectors of 1536 dims the slack is about 0.01-0.02.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from onetool_code.index import spill

CODE_MAX = 127
# Float64 rounding of the estimate and its slack (a few ulps of values <= 1e8), far below any float32 margin.
ROUNDING = 1e-9
# Threads of the int8 scan: the scan is memory-bound and both cores help (500,000 x 1536: 72 ms against 91).
THREADS = min(os.cpu_count() or 1, 4)
RESCORE_BLOCK = 256  # rows rescored from float32 between two checks of the stopping bound
ENCODE_BLOCK = 256  # rows encoded at a time


def encode(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Codes (int8), scales, residual norms |e| and code spans ``s |q|`` (float64) of float32 unit rows."""
    codes = np.empty(rows.shape, dtype=np.int8)
    scales, residuals, spans = (np.empty(rows.shape[0]) for _ in range(3))
    # Float64 copies of a block only, made into the same three buffers each time: the peak stays small, and no
    # temporary array is allocated per step.
    buffers = np.empty((3, min(ENCODE_BLOCK, rows.shape[0]), rows.shape[1]))
    for start in range(0, rows.shape[0], ENCODE_BLOCK):
        part = slice(start, start + ENCODE_BLOCK)
        exact, block, product = buffers[:, : rows[part].shape[0]]
        exact[...] = rows[part]
        # max |x| without a temporary (``0.0 - min``: a zero row's scale is +0.0, as ``abs`` made it, not -0.0)
        scale = np.maximum(exact.max(axis=1, initial=0.0), 0.0 - exact.min(axis=1, initial=0.0)) / CODE_MAX
        np.divide(exact, np.where(scale > 0, scale, 1.0)[:, np.newaxis], out=block)
        np.rint(block, out=block)
        np.clip(block, -CODE_MAX, CODE_MAX, out=block)
        spans[part] = scale * np.sqrt(np.einsum("ij,ij->i", block, block))
        exact -= np.multiply(scale[:, np.newaxis], block, out=product)
        residuals[part] = np.sqrt(np.einsum("ij,ij->i", exact, exact))
        scales[part] = scale
        codes[part] = block
    return codes, scales, residuals, spans


def margin(dims: int) -> float:
    """Twice the worst-case error of a float32 dot product of two unit vectors: (dims + 1) roundings of 2**-24."""
    return 2 * (dims + 2) * 2.0**-24


def sign_bytes(dims: int) -> int:
    return (dims + 7) // 8


def signs(rows: np.ndarray) -> np.ndarray:
    """The rows' sign bits, eight to a byte: what hybrid's shortlist compares (a 32nd of float32's bytes)."""
    return np.packbits(rows > 0, axis=1)


# Hybrid's semantic list is ranked among a shortlist: the rows whose sign bits are nearest the query's, this many
# per row of the list (at least SHORTLIST_MIN), in an index of SHORTLIST_FROM rows or more, where the int8 scan
# of every row costs the most of a search (1.09 M x 1536: 134 ms, at this machine's memory bandwidth; the sign
# bits: about 30 ms), and of SHORTLIST_DIMS dimensions or more: the sign bits of a small model's vectors (384 for
# e5-small) tell too little apart to shortlist by. The exact order (semantic mode) always scans every row.
SHORTLIST = 10
SHORTLIST_MIN = 4096
SHORTLIST_FROM = 250_000
SHORTLIST_DIMS = 1024


def shortlists(rows: int, dims: int) -> bool:
    """Whether hybrid ranks an index of ``rows`` vectors of ``dims`` among a shortlist."""
    return rows >= SHORTLIST_FROM and dims >= SHORTLIST_DIMS


def shortlist(unit: np.ndarray, signs: np.ndarray, need: int, allowed: np.ndarray | None) -> np.ndarray | None:
    """The rows (of ``allowed``, None: all) whose sign bits are nearest ``unit``'s by Hamming distance, in row
    order; None when every row is worth scanning (a small index or model, or few rows allowed).

    Not a bound: a row of the true top could be missing. At 1.09 M x 1536 (``bench/million.py``'s test vectors),
    the top 400 by float32 product of 5 queries were all within the nearest 2,000 by Hamming distance, and 20 of
    20 default answers were unchanged (bench/README.md, issue 38)."""
    import simsimd

    size = max(SHORTLIST * need, SHORTLIST_MIN)
    if not shortlists(signs.shape[0], unit.size) or size >= (signs.shape[0] if allowed is None else allowed.size):
        return None
    query = np.packbits(unit > 0)[np.newaxis]

    def distance(window: np.ndarray) -> np.ndarray:
        return np.asarray(simsimd.cdist(query, window, metric="hamming", dtype="bin8", threads=THREADS))[0]

    distances = np.concatenate(spill.by_window(signs, distance))
    if allowed is None:
        return np.sort(np.argpartition(distances, size)[:size])
    return np.sort(allowed[np.argpartition(distances[allowed], size)[:size]])


def bounds(
    unit: np.ndarray, parts: list[np.ndarray], scales: np.ndarray, residuals: np.ndarray, spans: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's lower and upper bound on its cosine with the float32 unit vector ``unit``; ``parts`` are the
    codes, in row order (a base's and a delta's)."""
    import simsimd  # here, not at import: the pack's start-up never loads it

    query = unit.astype(np.float64)
    scale = float(np.abs(query).max(initial=0.0)) / CODE_MAX
    if scale == 0.0:
        zero = np.zeros(scales.size)
        return zero, zero
    codes = np.clip(np.rint(query / scale), -CODE_MAX, CODE_MAX)
    rest = float(np.linalg.norm(query - scale * codes))
    packed = codes.astype(np.int8)[np.newaxis]

    def dot(window: np.ndarray) -> np.ndarray:
        return np.asarray(simsimd.cdist(packed, window, metric="dot", threads=THREADS))[0]

    dots = np.concatenate([d for part in parts if part.size for d in spill.by_window(part, dot)] or [np.zeros(0)])
    estimate = scales * scale * dots if dots.size else np.zeros(0)
    slack = residuals * float(np.linalg.norm(query)) + spans * rest + ROUNDING
    return estimate - slack, estimate + slack


def rescore_until_sure(
    candidates: np.ndarray, upper: np.ndarray, need: int, margin: float, exact: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The candidates that may be in the top ``need`` and their exact keys, rescored best upper bound first.

    It stops once ``need`` rows are rescored and the next upper bound is below the ``need``-th exact key less
    ``margin``: no row left can reach the page. ``exact`` gives the keys of some candidates (inf, -inf for the
    rows the SQL sorts first and last)."""
    order = np.argsort(-upper, kind="stable")
    done: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    held = np.zeros(0)
    for start in range(0, order.size, RESCORE_BLOCK):
        block = candidates[order[start : start + RESCORE_BLOCK]]
        done.append(block)
        keys.append(exact(block))
        held = np.concatenate(keys)
        following = start + RESCORE_BLOCK
        if following >= order.size or held.size < need:
            continue
        kth = np.partition(held, held.size - need)[held.size - need]
        if upper[order[following]] < kth - margin:
            break
    if not done:
        return candidates[:0], held
    return np.concatenate(done), held
