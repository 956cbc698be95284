"""The int8 scan's bound: every cosine within it, and the candidates it keeps always hold the exact top."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from onetool_code.index import quantised, spill

DIMS = 384


def _units(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _near_copies(seed: int, count: int = 4000) -> tuple[np.ndarray, np.ndarray]:
    """Rows clustered around the query (a repository copied many times, each copy nudged): the int8 estimates
    of the closest rows are then out of order, so only a deep enough rescoring finds the true top."""
    rng = np.random.default_rng(seed)
    query = _units(rng.standard_normal((1, DIMS)))[0]
    rows = _units(query + rng.standard_normal((count, DIMS)) * rng.uniform(0.02, 0.6, (count, 1)))
    return query, rows


def _exact(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    return rows.astype(np.float64) @ query.astype(np.float64)


def _top(query: np.ndarray, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray, need: int) -> list[int]:
    """The page as a search makes it from these bounds: candidates, rescoring, order."""
    kth = np.partition(lower, lower.size - need)[lower.size - need]
    picked = np.flatnonzero(upper >= kth)
    done, keys = quantised.rescore_until_sure(picked, upper[picked], need, 0.0, lambda b: _exact(rows[b], query))
    return [int(i) for i in done[np.argsort(-keys, kind="stable")][:need]]


@pytest.mark.parametrize("seed", range(5))
def test_every_cosine_lies_within_its_bounds(seed):
    rng = np.random.default_rng(seed)
    rows = _units(rng.standard_normal((3000, DIMS)) * rng.uniform(0.01, 100, (3000, 1)))
    rows[:50, :] = 0
    rows[:50, 0] = 1  # one spike: the whole scale on one value
    rows[50:100] = _units(rng.standard_normal((50, DIMS)) ** 9)  # heavy tails: coarse codes elsewhere
    query = _units(rng.standard_normal((1, DIMS)) ** 3)[0]
    codes, scales, residuals, spans = quantised.encode(rows)
    lower, upper = quantised.bounds(query, [codes], scales, residuals, spans)
    exact = _exact(rows, query)
    assert np.all(lower <= exact) and np.all(exact <= upper)
    assert np.median(upper - lower) < 0.1  # and the bound is a bound worth having


def test_the_candidates_hold_the_exact_top_where_a_shallower_cut_would_not():
    """Over many clustered sets the bound's candidates always give the exact top 10; rescoring only the 10
    best estimates misses it in some: the depth the bound gives is needed."""
    shallow = 0
    for seed in range(16):
        query, rows = _near_copies(seed, count=20000)
        codes, scales, residuals, spans = quantised.encode(rows)
        lower, upper = quantised.bounds(query, [codes], scales, residuals, spans)
        truth = [int(i) for i in np.argsort(-_exact(rows, query), kind="stable")[:10]]
        assert _top(query, rows, lower, upper, 10) == truth
        estimates = (lower + upper) / 2
        shallow += _top(query, rows, estimates, estimates, 10) != truth
    assert shallow


def test_rescoring_stops_once_no_row_left_can_enter_the_page():
    query, rows = _near_copies(7, count=20000)
    codes, scales, residuals, spans = quantised.encode(rows)
    _, upper = quantised.bounds(query, [codes], scales, residuals, spans)
    candidates = np.arange(rows.shape[0])
    done, _ = quantised.rescore_until_sure(candidates, upper, 10, 0.0, lambda b: _exact(rows[b], query))
    assert done.size < rows.shape[0] // 4
    left = np.setdiff1d(candidates, done)
    assert _exact(rows[left], query).max() < np.sort(_exact(rows[done], query))[-10]


def test_a_zero_query_bounds_every_row_at_zero():
    rows = _units(np.random.default_rng(0).standard_normal((10, DIMS)))
    lower, upper = quantised.bounds(
        np.zeros(DIMS, np.float32), [quantised.encode(rows)[0]], *quantised.encode(rows)[1:]
    )
    assert not lower.any() and not upper.any()


def _leaning(seed: int, count: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A query the int8 codes hold exactly (every value +-1/sqrt(dims)) and rows whose rounding error leans on it
    as far as rounding lets it: each value 0.49 of a step off its code, along the query ("up" rows, even) or
    against it ("down" rows, odd, whose codes are three to five steps closer to the query where the up rows' are
    zero to two). A row's error is then 99.9% of its bound, and every down row's estimate beats every up row's
    while its cosine is lower."""
    rng = np.random.default_rng(seed)
    sign = np.where(rng.random(DIMS) < 0.5, -1.0, 1.0)
    query = (sign / np.sqrt(DIMS)).astype(np.float32)
    base = np.where(rng.random(DIMS) < 0.5, -1, 1) * rng.integers(40, 100, DIMS)  # unrelated to the query
    codes = np.tile(base, (count, 1)).astype(np.float64)
    codes[:, 0] = 127  # the largest value, with no error: it sets the scale, so the codes are these
    up = np.arange(count) % 2 == 0
    for row in range(count):
        closer = rng.choice(np.arange(1, DIMS), rng.integers(0, 3) + (0 if up[row] else 3), replace=False)
        codes[row, closer] += sign[closer]
    lean = np.where(up, 0.49, -0.49)[:, np.newaxis] * sign
    lean[:, 0] = 0.0
    return query, _units(codes + lean), codes


def test_the_bound_is_attained_within_a_tenth_of_a_percent_and_never_passed():
    """A bound any tighter would be passed by some row here: the bound is as small as it may be."""
    query, rows, codes = _leaning(3)
    encoded, scales, residuals, spans = quantised.encode(rows)
    assert np.array_equal(encoded, codes)  # the rows are what they were made to be
    lower, upper = quantised.bounds(query, [encoded], scales, residuals, spans)
    exact = _exact(rows, query)
    assert np.all(lower <= exact) and np.all(exact <= upper)
    used = np.abs(exact - (lower + upper) / 2) / ((upper - lower) / 2)
    assert used.max() > 0.995


def test_rows_whose_estimates_are_out_of_order_are_rescored_into_the_exact_top():
    """Every estimate puts the "down" rows first, every cosine the "up" rows: a page made from the estimates
    alone is wrong, the bound's candidates give the exact one."""
    query, rows, _ = _leaning(5)
    encoded, scales, residuals, spans = quantised.encode(rows)
    lower, upper = quantised.bounds(query, [encoded], scales, residuals, spans)
    truth = [int(i) for i in np.argsort(-_exact(rows, query), kind="stable")[:10]]
    assert all(i % 2 == 0 for i in truth)
    assert _top(query, rows, lower, upper, 10) == truth
    estimates = (lower + upper) / 2
    assert all(i % 2 == 1 for i in _top(query, rows, estimates, estimates, 10))


def _resident_kib(path: str) -> int:
    """What this process counts as its own of the mappings of ``path`` (``Rss`` in /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text(encoding="utf-8").splitlines():
        if "-" in line.split(" ", 1)[0]:
            inside = line.rstrip().endswith(path)
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_mapped_codes_are_scanned_a_window_at_a_time_and_none_is_kept(tmp_path, monkeypatch):
    """Bounds from codes mapped from a file (a header of 128 bytes and rows of 373 bytes: no window starts on a
    page) equal those of the same codes in memory, for a base and a delta part, and the scan leaves none of the
    file's pages counted as the process's."""
    query, rows = _near_copies(3, count=3000)
    rows = rows[:, :373]
    query = _units(query[np.newaxis, :373])[0]
    rows = _units(rows)
    codes, scales, residuals, spans = quantised.encode(rows)
    path = tmp_path / "codes.npy"
    np.save(path, codes[:2500])
    mapped = np.load(path, mmap_mode="r")
    monkeypatch.setattr(spill, "WINDOW_BYTES", 40_000)  # 107 rows a window: 24 windows, each off a page boundary
    held = quantised.bounds(query, [codes[:2500], codes[2500:]], scales, residuals, spans)
    scanned = quantised.bounds(query, [mapped, codes[2500:]], scales, residuals, spans)
    assert np.array_equal(held[0], scanned[0]) and np.array_equal(held[1], scanned[1])
    exact = _exact(rows, query)
    assert np.all((scanned[0] <= exact) & (exact <= scanned[1]))
    assert _resident_kib(str(path)) == 0
    spill.by_window(mapped, lambda window: None)
    assert _resident_kib(str(path)) == 0
    np.asarray(mapped).sum()  # read through the one mapping, as the scan did before: all of it is counted
    assert _resident_kib(str(path)) >= path.stat().st_size // 1024 - 4


def test_the_encoding_is_its_formulas_to_the_bit():
    """``encode`` works in place, block by block, for speed: its codes and terms are still the formulas' own, on
    zero rows (a +0.0 scale), all-negative rows and a last block shorter than the others."""
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((quantised.ENCODE_BLOCK * 2 + 37, 24)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows[3] = 0.0
    rows[7] = -np.abs(rows[7])
    exact = rows.astype(np.float64)
    scale = np.abs(exact).max(axis=1) / quantised.CODE_MAX
    codes = np.clip(np.rint(exact / np.where(scale > 0, scale, 1.0)[:, np.newaxis]), -127, 127)
    residual = np.linalg.norm(exact - scale[:, np.newaxis] * codes, axis=1)
    got = quantised.encode(rows)
    assert np.array_equal(got[0], codes.astype(np.int8))
    assert got[1].tobytes() == scale.tobytes()  # bit for bit: +0.0 is not -0.0
    assert np.allclose(got[2], residual, rtol=1e-12, atol=0)
    assert np.allclose(got[3], scale * np.linalg.norm(codes, axis=1), rtol=1e-12, atol=0)
