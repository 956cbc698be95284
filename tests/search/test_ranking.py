"""Reciprocal-rank fusion and de-duplication over plain hits."""

from __future__ import annotations

from onetool_code.hits import Hit
from onetool_code.search.ranking import RRF_K, dedupe, fuse, page


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


def test_fused_scores_are_reciprocal_ranks_with_k_60():
    # a: 1/(k+1) in one list; b: 1/(k+2) in each of two. With k=60 b wins (2/62 > 1/61) although a is more
    # similar; with k=0 they would tie (1 = 1/2 + 1/2) and the similarity would put a first.
    assert RRF_K == 60
    q1 = [hit("a.py", 1, 0.9), hit("b.py", 1, 0.3)]
    q2 = [hit("c.py", 1, 0.8), hit("b.py", 1, 0.3)]
    assert [h.file_path for h in fuse([q1, q2], limit=3)] == ["b.py", "a.py", "c.py"]


def test_dedupe_keeps_first():
    hits = [hit("a.py", 1, 0.9), hit("a.py", 1, 0.3), hit("a.py", 2, 0.2)]
    assert dedupe(hits) == [hits[0], hits[2]]


def test_pages_are_disjoint_and_gapless_slices_of_the_deduplicated_list():
    # Position 3 repeats position 0 (within page 1); position 10 repeats position 9 (across the boundary).
    ranked = [hit(f"f{i}.py", 1, 1 - i / 100) for i in range(20)]
    ranked[3] = hit("f0.py", 1, 0.5)
    ranked[10] = hit("f9.py", 1, 0.4)  # the first hit of page 2 repeats the last of page 1
    first, second = page(ranked, 0, 10), page(ranked, 10, 20)
    assert [h.file_path for h in first] == [f"f{i}.py" for i in (0, 1, 2, 4, 5, 6, 7, 8, 9)]
    assert [h.rank for h in first] == [0, 1, 2, 4, 5, 6, 7, 8, 9]
    assert [h.file_path for h in second] == [f"f{i}.py" for i in range(11, 20)]
    assert {h.key for h in first}.isdisjoint({h.key for h in second})
    assert {h.key for h in first} | {h.key for h in second} == {h.key for h in ranked}
