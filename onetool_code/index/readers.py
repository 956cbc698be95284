"""The three rankings over one state of an index: the request and a depth in, one ranked list of hits per query
out (the top ``depth`` of each, from position 0), every hit carrying its file's row state.

- semantic: ChunkHound's own order, exactly (the snapshot's vectors reproduce its SQL; ``test_cache``).
- lexical: BM25 over identifier-aware tokens (``lexical.py``), no key and no network.
- regex: ChunkHound's regex search, RE2 over chunk code, in path and line order.

Two readers give them: ``FromSnapshot`` (the default: memory-mapped, the index file untouched) and
``FromIndex`` (snapshots off: ChunkHound's SQL on the caller's short read-only connection, never kept). The
engine picks the rankings; ``ranking`` fuses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from onetool_code import names
from onetool_code.errors import BadInputError
from onetool_code.hits import FileRow, Hit
from onetool_code.index import database, lexical, rows
from onetool_code.index.snapshot import Snapshot
from onetool_code.index.store import STORE, Key, Signature
from onetool_code.schema import Filters

if TYPE_CHECKING:
    import duckdb

# A common name (``get``) is in tens of thousands of chunks: the code of this many is read for its definitions.
CODE_SCAN = 3_000


class Reader(Protocol):
    # Whether two of its rankings may run at once on two threads: a snapshot's arrays are only read; a DuckDB
    # connection is not shared across threads.
    concurrent: bool

    def semantic(
        self, embedding_set: database.EmbeddingSet, vectors: np.ndarray, filters: Filters, depth: int, exact: bool
    ) -> list[list[Hit]]:
        """``exact``: ChunkHound's order to the last bit of its float64 sum (semantic mode); else any order of the
        same similarities that ties may shuffle (hybrid fuses ranks)."""
        ...

    def lexical(self, queries: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]: ...

    def shares(self, queries: Sequence[str]) -> dict[str, float]:
        """Each of the queries' tokens (``names.query_tokens``) with the share of the index's chunks that hold it."""
        ...

    def file_words(self, queries: Sequence[str]) -> list[dict[str, float]]:
        """Each query's files, each with its BM25 score as one document (``lexical.LexicalIndex.file_scores``)."""
        ...

    def regex(self, patterns: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]: ...

    def defining(self, symbols: Sequence[str], filters: Filters, depth: int) -> list[Hit]: ...

    def holding(self, path: str, line: int) -> list[Hit] | None:
        """The chunks of ``path`` whose lines hold ``line``; None when the index has no such file."""
        ...

    def vector_of(self, embedding_set: database.EmbeddingSet, chunk_id: int) -> np.ndarray | None:
        """The chunk's stored vector of that model (no embeddings request); None when it has none."""
        ...

    def files(self) -> Sequence[FileRow]:
        """Every file of the index, in path order."""
        ...


@dataclass(frozen=True)
class FromSnapshot:
    snapshot: Snapshot
    concurrent: bool = True

    def semantic(
        self, embedding_set: database.EmbeddingSet, vectors: np.ndarray, filters: Filters, depth: int, exact: bool
    ) -> list[list[Hit]]:
        pages = self.snapshot.vectors[embedding_set].rank(vectors, filters, depth, 0, exact=exact)
        return [self.snapshot.chunks.hits(page) for page in pages]

    def lexical(self, queries: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]:
        ranked = self.snapshot.lexical_index.rank([names.query_tokens(q) for q in queries], filters, depth)
        return [self.snapshot.chunks.hits(page) for page in ranked]

    def shares(self, queries: Sequence[str]) -> dict[str, float]:
        return self.snapshot.lexical_index.shares(names.query_tokens(*queries))

    def file_words(self, queries: Sequence[str]) -> list[dict[str, float]]:
        return [self.snapshot.lexical_index.file_scores(names.query_tokens(q)) for q in queries]

    def regex(self, patterns: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]:
        return [self.snapshot.chunks.regex(pattern, filters, depth) for pattern in patterns]

    def defining(self, symbols: Sequence[str], filters: Filters, depth: int) -> list[Hit]:
        """The code read is that of the chunks holding a name's token, the ``CODE_SCAN`` best by BM25 at most."""
        scores = self.snapshot.lexical_index.scores([names.stem(n) for n in symbols])
        holding = np.flatnonzero(scores > 0)
        if holding.size > CODE_SCAN:
            holding = holding[np.argpartition(-scores[holding], CODE_SCAN)[:CODE_SCAN]]
        return self.snapshot.chunks.defining(symbols, filters, depth, holding)

    def holding(self, path: str, line: int) -> list[Hit] | None:
        if path not in self.snapshot.chunks.attributes.paths:
            return None
        return self.snapshot.chunks.holding(path, line)

    def vector_of(self, embedding_set: database.EmbeddingSet, chunk_id: int) -> np.ndarray | None:
        return self.snapshot.vectors[embedding_set].vector_of(chunk_id)

    def files(self) -> Sequence[FileRow]:
        return self.snapshot.files


@dataclass(frozen=True)
class FromIndex:
    con: duckdb.DuckDBPyConnection
    db_path: Path
    concurrent: bool = False

    def semantic(
        self, embedding_set: database.EmbeddingSet, vectors: np.ndarray, filters: Filters, depth: int, exact: bool
    ) -> list[list[Hit]]:
        """ChunkHound's SQL: always exact."""
        return database.with_file_states(
            self.con, database.semantic(self.con, embedding_set, vectors, filters, depth, 0)
        )

    def lexical(self, queries: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]:
        ranked = self._words().rank([names.query_tokens(q) for q in queries], filters, depth)
        found = database.chunks_by_id(self.con, sorted({chunk_id for page in ranked for chunk_id, _ in page}))
        lists = [[database.hit_from_row(found[chunk_id], score) for chunk_id, score in page] for page in ranked]
        return database.with_file_states(self.con, lists)

    def shares(self, queries: Sequence[str]) -> dict[str, float]:
        return self._words().shares(names.query_tokens(*queries))

    def file_words(self, queries: Sequence[str]) -> list[dict[str, float]]:
        return [self._words().file_scores(names.query_tokens(q)) for q in queries]

    def _words(self) -> lexical.LexicalIndex:
        """The lexical index lives in this process's memory only, one per state of the file."""
        return STORE.ensure(
            Key("lexical", str(self.db_path)),
            Signature.of(self.db_path),  # the connection's lock keeps writers out
            lambda: lexical.build(rows.build(database.file_rows(self.con), database.chunk_rows(self.con))),
        )

    def regex(self, patterns: Sequence[str], filters: Filters, depth: int) -> list[list[Hit]]:
        """DuckDB's ``regexp_matches`` is RE2: linear in the text, so no pattern can hang a search."""
        import duckdb

        lists = []
        for pattern in patterns:
            try:
                lists.append(database.regex(self.con, pattern, filters, depth))
            except duckdb.InvalidInputException as exc:
                reason = str(exc).split("Error:", 1)[-1].strip().splitlines()[0][:200]
                raise BadInputError(f"{rows.NOT_A_PATTERN}: {reason}") from exc
        return database.with_file_states(self.con, lists)

    def defining(self, symbols: Sequence[str], filters: Filters, depth: int) -> list[Hit]:
        found = database.defining(self.con, symbols, names.definition_lines(symbols), filters, depth)
        return database.with_file_states(self.con, [found])[0]

    def holding(self, path: str, line: int) -> list[Hit] | None:
        ids = database.chunks_holding(self.con, path, line)
        if ids is None:
            return None
        return [database.hit_from_row(row, 1.0) for row in database.chunks_by_id(self.con, ids).values()]

    def vector_of(self, embedding_set: database.EmbeddingSet, chunk_id: int) -> np.ndarray | None:
        return database.vector_of(self.con, embedding_set, chunk_id)

    def files(self) -> Sequence[FileRow]:
        return database.file_rows(self.con)
