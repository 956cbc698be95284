"""Reciprocal-rank fusion and de-duplication over plain hits."""

from __future__ import annotations

from onetool_code.hits import Hit
from onetool_code.ranking import RRF_K, dedupe, fuse


def hit(path: str, start: int, score: float, end: int | None = None) -> Hit:
    return Hit(0, path, "python", "function", "f", "code", start, end or start + 5, score)


def test_every_querys_best_hit_surfaces():
    # Query 2's scores are all lower, but its best hit still outranks query 1's third.
    q1 = [hit("a.py", 1, 0.9), hit("b.py", 1, 0.89), hit("c.py", 1, 0.88)]
    q2 = [hit("x.py", 1, 0.4), hit("y.py", 1, 0.39)]
    fused = fuse([q1, q2], limit=3)
    assert [h.file_path for h in fused] == ["a.py", "x.py", "b.py"]
    assert [h.queries for h in fused] == [(1,), (2,), (1,)]


def test_duplicates_keep_the_higher_similarity_and_list_both_queries():
    fused = fuse([[hit("a.py", 1, 0.5)], [hit("a.py", 1, 0.7), hit("b.py", 1, 0.6)]], limit=10)
    assert fused[0].file_path == "a.py" and fused[0].score == 0.7 and fused[0].queries == (1, 2)
    assert len(fused) == 2


def test_fused_list_is_capped_in_total():
    lists = [[hit(f"{q}{i}.py", 1, 0.5) for i in range(10)] for q in "abc"]
    assert len(fuse(lists, limit=10)) == 10


def test_fused_scores_are_reciprocal_ranks():
    fused = fuse([[hit("a.py", 1, 0.5), hit("b.py", 1, 0.4)], [hit("b.py", 1, 0.4)]], limit=2)
    # b: 1/(k+2) + 1/(k+1) beats a: 1/(k+1).
    assert 1 / (RRF_K + 2) + 1 / (RRF_K + 1) > 1 / (RRF_K + 1)
    assert [h.file_path for h in fused] == ["b.py", "a.py"]


def test_dedupe_keeps_first():
    hits = [hit("a.py", 1, 0.9), hit("a.py", 1, 0.3), hit("a.py", 2, 0.2)]
    assert dedupe(hits) == [hits[0], hits[2]]
