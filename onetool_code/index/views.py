"""What one search reads: a snapshot of the index (the default), or, with snapshots off, the file itself.

The trap, with snapshots off: the file is opened twice, briefly (its layout, then the rankings), and never across
the embeddings request between them: a network call of up to 30 s must not keep ChunkHound locked out of its own
index.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from onetool_code.errors import BadInputError
from onetool_code.index import database, overlay
from onetool_code.index.readers import FromIndex, FromSnapshot, Reader
from onetool_code.index.snapshot import Snapshot
from onetool_code.schema import Filters

if TYPE_CHECKING:
    import numpy as np


class View(Protocol):
    """One state of the index, as a search reads it. ``notice`` says, in one line, when it is not the file's
    current state (or why snapshots are off)."""

    @property
    def layout(self) -> database.Layout: ...

    @property
    def notice(self) -> str | None: ...

    def check_languages(self, filters: Filters) -> None: ...

    def prefetch(self, vectors: database.EmbeddingSet, exact: bool) -> None: ...

    def reader(self) -> contextlib.AbstractContextManager[Reader]: ...

    def unembedded(self, vectors: database.EmbeddingSet) -> tuple[str, ...]:
        """The code of the chunks laid over the index from the checkout that have no vector of this model."""
        ...

    def embedded(self, vectors: database.EmbeddingSet, among: Sequence[int], matrix: np.ndarray) -> View:
        """This view with vectors for some of those chunks: positions ``among`` in ``unembedded``'s order, their
        rows of ``matrix`` in the same order."""
        ...


@dataclass(frozen=True)
class SnapshotView:
    snapshot: Snapshot
    notice: str | None
    laid: overlay.Laid | None = None  # the checkout laid over the snapshot, when it differs from it

    @property
    def layout(self) -> database.Layout:
        return self.snapshot.layout

    def check_languages(self, filters: Filters) -> None:
        check_languages(self.snapshot.language_counts, filters)

    def prefetch(self, vectors: database.EmbeddingSet, exact: bool) -> None:
        """Page a model's vectors in while the query is embedded (what an ``exact`` ranking, or hybrid's, reads)."""
        self.snapshot.vectors[vectors].prefetch(exact)

    @contextlib.contextmanager
    def reader(self) -> Iterator[Reader]:
        yield FromSnapshot(self.snapshot)

    def unembedded(self, vectors: database.EmbeddingSet) -> tuple[str, ...]:
        return () if self.laid is None else tuple(code for _, code in self.laid.unembedded(vectors))

    def embedded(self, vectors: database.EmbeddingSet, among: Sequence[int], matrix: np.ndarray) -> SnapshotView:
        assert self.laid is not None
        lacking = self.laid.unembedded(vectors)
        ids = [lacking[i][0] for i in among]
        laid = overlay.with_vectors(self.snapshot.db_path, self.laid, vectors, ids, matrix)
        return dataclasses.replace(self, snapshot=laid.snapshot, laid=laid)


@dataclass(frozen=True)
class FileView:
    project_root: Path
    db_path: Path
    layout: database.Layout
    language_counts: Sequence[tuple[str, int, int]]
    notice: str | None

    @classmethod
    def read(cls, project_root: Path, db_path: Path, notice: str | None) -> FileView:
        with database.connect(project_root, db_path) as con:  # closed before the embeddings request
            return cls(project_root, db_path, database.layout(con, db_path), database.language_counts(con), notice)

    def check_languages(self, filters: Filters) -> None:
        check_languages(self.language_counts, filters)

    def prefetch(self, vectors: database.EmbeddingSet, exact: bool) -> None:
        """Nothing is mapped: ChunkHound's SQL reads the file."""

    @contextlib.contextmanager
    def reader(self) -> Iterator[Reader]:
        with database.connect(self.project_root, self.db_path) as con:
            yield FromIndex(con, self.db_path)

    def unembedded(self, vectors: database.EmbeddingSet) -> tuple[str, ...]:
        """With snapshots off the checkout is not laid over the index."""
        return ()

    def embedded(self, vectors: database.EmbeddingSet, matrix: np.ndarray) -> FileView:
        return self


def check_languages(present: Sequence[tuple[str, int, int]], filters: Filters) -> None:
    """A language filter naming no language of this index is a mistake worth saying, not an empty answer.

    ``present``: (language, files, chunks) as ``database.language_counts`` gives them.
    """
    if not filters.languages:
        return
    names = {lang for lang, _, _ in present}
    if not names.intersection(filters.languages):
        held = ", ".join(f"{lang} ({files} files)" for lang, files, _ in present) or "nothing"
        raise BadInputError(f"no files in language {'|'.join(filters.languages)} in this index; it holds: {held}")
