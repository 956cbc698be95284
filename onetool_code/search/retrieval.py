"""Each query's ranked list from the rankings its mode calls for: the reader's semantic, lexical or regex list,
or, for hybrid, the definitions the query names, its words and its meaning fused with structural priors."""

from __future__ import annotations

import functools
import math
import os
import threading
from collections.abc import Callable, Sequence, Set
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from onetool_code import index
from onetool_code.hits import Hit
from onetool_code.project.source import SourceFiles
from onetool_code.request import Request
from onetool_code.search import file_roles, lookup, ranking
from onetool_code.search.query_vectors import Semantic

# How deep each list of a hybrid search goes before fusion: deep enough that a definition ranked 60th by one
# ranking and 5th by the other still meets itself.
HYBRID_DEPTH = 100
# ... read that many times deeper, to keep at most PER_FILE hits of each file (``_per_file``).
WIDEN = 4
PER_FILE = 10


class _Beside:
    """The threads the semantic list of a hybrid search is ranked on while the caller's thread builds the lexical
    list and looks the named definitions up: the matrix product is most of a search's time and numpy lets go of
    the GIL for it. Started on first use and kept (starting a thread costs a GIL hand-over); a few, for the
    searches of several agents at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, work: Callable[[], list[list[Hit]]]) -> Callable[[], list[list[Hit]]]:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="onetool-code semantic")
            return self._pool.submit(work).result

    def forget(self) -> None:
        """A forked child has none of its parent's threads, only a copy of a pool that counts them as idle (and
        would queue its work for no thread) and of a lock another thread may have held: it starts afresh."""
        self.__init__()  # type: ignore[misc]


_BESIDE = _Beside()
os.register_at_fork(after_in_child=_BESIDE.forget)


def ranked(reader: index.Reader, request: Request, semantic: Semantic | None, project_root: Path) -> list[list[Hit]]:
    """One ranked list per query, ``request.depth`` deep, from the rankings the mode calls for."""
    depth, filters = request.depth, request.filters
    if request.mode == "regex":
        return reader.regex(request.queries, filters, depth)
    if request.mode == "semantic":
        assert semantic is not None
        return reader.semantic(semantic.embedding_set, semantic.vectors, filters, depth, exact=True)
    if request.mode == "lexical":
        return reader.lexical(request.queries, filters, depth)
    # Hybrid, or what is left of it without vectors: the priors still put definitions first. Each fused list is
    # cut to the depth of the other modes' lists, so that a batch fuses the best of each query.
    deep = max(depth, HYBRID_DEPTH)
    wide = deep * WIDEN
    sources = SourceFiles(project_root)
    pending = _beside(reader, semantic, request, wide) if semantic else None
    named = [lookup.find(reader, sources, query, filters, deep) for query in request.queries]
    words = reader.lexical(request.queries, filters, wide)
    files = reader.file_words(request.queries)
    # A chunk whose stored vector has no cosine (zeros or NaN) is ranked first by ChunkHound's order: meaning
    # says nothing of it, so it is left to the other lists.
    meanings = [[h for h in m if math.isfinite(h.score)] for m in pending()] if pending else [[] for _ in words]
    project = file_roles.project_words(project_root.name)
    lists = []
    for m, w, query, found, whole in zip(meanings, words, request.queries, named, files, strict=True):
        kept = {hit.key for hit in found.hits}
        m, w = _per_file(m, deep, kept), _per_file(w, deep, kept)
        lists.append(ranking.hybrid(m, w, query, filters, found.hits, found.qualified, depth, project, whole))
    return lists


def _beside(reader: index.Reader, semantic: Semantic, request: Request, depth: int) -> Callable[[], list[list[Hit]]]:
    """The semantic lists: ranked on a kept thread from now when the reader allows it, else when asked for."""
    vectors = semantic.embedding_set, semantic.vectors
    rank = functools.partial(reader.semantic, *vectors, request.filters, depth, exact=False)
    return _BESIDE.submit(rank) if reader.concurrent else rank


def _per_file(hits: Sequence[Hit], depth: int, named: Set[tuple[str, int, int]]) -> list[Hit]:
    """The first ``depth`` hits, at most ``PER_FILE`` of each file: a big file whose every chunk holds the query's
    words (Django's ``query.py``, fmt's ``format.h``) must leave room in the list for the other files. The
    definitions of a name the query writes (``named``) are kept past the cap: gin's ``type Engine`` lives in a
    file of many chunks that say ``Engine``."""
    seen: dict[str, int] = {}
    kept = []
    for hit in hits:
        if hit.key in named or seen.get(hit.file_path, 0) < PER_FILE:
            seen[hit.file_path] = seen.get(hit.file_path, 0) + 1
            kept.append(hit)
            if len(kept) == depth:
                break
    return kept
