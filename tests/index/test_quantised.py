"""The int8 scan's bound: every cosine within it, and the candidates it keeps always hold the exact top."""

from __future__ import annotations

import numpy as np
import pytest

from onetool_code.index import quantised

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
