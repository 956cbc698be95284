"""The three rankings, one interface: a read-only connection, the request and a depth in, one ranked list of
hits per query out (the top ``depth`` of each, from position 0).

- ``Semantic``: ChunkHound's own order, exactly (its SQL, or the vector cache that reproduces it).
- ``lexical``: BM25 over identifier-aware tokens (``lexical.py``), no key and no network.
- ``regex``: ChunkHound's regex search, a regular expression over chunk code, in path and line order.

Each borrows the caller's connection and never keeps it. The engine picks retrievers; ``ranking`` fuses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from onetool_code import cache, index, lexical
from onetool_code.errors import BadInputError
from onetool_code.hits import Hit
from onetool_code.request import Request

if TYPE_CHECKING:
    import duckdb

    from onetool_code.settings import Settings


@dataclass(frozen=True)
class Semantic:
    """The query vectors of one call (one embeddings request) and the index's vectors they are compared with."""

    settings: Settings
    embedding_set: index.EmbeddingSet
    vectors: np.ndarray

    def rank(self, con: duckdb.DuckDBPyConnection, request: Request, depth: int) -> list[list[Hit]]:
        args = (self.embedding_set, self.vectors, request.filters, depth, 0)
        if self.settings.cache:  # the same hits, from memory once warm
            return cache.semantic(con, self.settings.db_path, *args)
        return index.semantic(con, *args)


def lexical_index(con: duckdb.DuckDBPyConnection, settings: Settings) -> lexical.LexicalIndex:
    """The lexical index of the file, checking first that the file is ChunkHound's when it must be read."""
    if lexical.language_counts(settings.db_path) is None:
        index.layout(con, settings.db_path)
    return lexical.get(con, settings.db_path)


def lexical_ranking(
    con: duckdb.DuckDBPyConnection, words: lexical.LexicalIndex, request: Request, depth: int
) -> list[list[Hit]]:
    ranked = words.rank([lexical.query_tokens(q) for q in request.queries], request.filters, depth)
    rows = index.chunks_by_id(con, sorted({chunk_id for page in ranked for chunk_id, _ in page}))
    return [[index.hit_from_row(rows[chunk_id], score) for chunk_id, score in page] for page in ranked]


def regex(con: duckdb.DuckDBPyConnection, request: Request, depth: int) -> list[list[Hit]]:
    """DuckDB's ``regexp_matches`` is RE2: linear in the text, so no pattern can hang a search."""
    import duckdb

    lists = []
    for pattern in request.queries:
        try:
            lists.append(index.regex(con, pattern, request.filters, depth))
        except duckdb.InvalidInputException as exc:
            reason = str(exc).split("Error:", 1)[-1].strip().splitlines()[0][:200]
            raise BadInputError(
                f"query is not a valid regular expression (RE2 syntax, no lookaround or backreferences): {reason}"
            ) from exc
    return lists
