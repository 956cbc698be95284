"""``related``: more code like a place already found, ranked by the stored vector of the chunk there.

No embeddings request: the index already holds every chunk's vector (the snapshot maps them, ``cache.py``), so the
chunk's own vector is the query and the order is exactly that of a semantic search whose query vector it is
(ChunkHound's SQL with snapshots off). The chunk itself is left out of its own answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import numpy as np

from onetool_code import derived, index, live, ranking, retrievers
from onetool_code.engine import Ranked, check_languages, embedding_set
from onetool_code.errors import BadInputError, ModelNotInIndexError
from onetool_code.hits import Hit
from onetool_code.request import Request
from onetool_code.settings import Settings


def indexed_path(project_root: Path, file: str) -> str:
    """``file`` as the index writes paths (relative to the project, ``/``-separated): an absolute path inside the
    project and a leading ``./`` are accepted, as an agent copies them from an answer or its own tools."""
    given = file.strip().replace("\\", "/")
    if Path(given).is_absolute():
        try:
            given = Path(given).relative_to(project_root).as_posix()
        except ValueError:
            raise BadInputError(f"file {file!r} is outside the project {project_root}") from None
    parts = [part for part in PurePosixPath(given).parts if part != "."]
    if not parts:
        raise BadInputError('file must name a file of the index, e.g. file="src/app.py"')
    return "/".join(parts)


def run(settings: Settings, request: Request, file: str, line: int) -> Ranked:
    """The page of chunks most like the chunk at ``file``:``line`` (the smallest holding that line)."""
    path = indexed_path(settings.project_root, file)
    depth = request.offset + request.limit + 2  # one more to tell a next page, one for the chunk itself
    if settings.cache and derived.cache_problem() is None:
        view = live.view(settings.project_root, settings.db_path)
        held = view.snapshot
        chosen = embedding_set(held.layout, settings)
        check_languages(held.language_counts, request.filters)
        vectors = held.vectors[chosen]
        holding = held.chunks.holding(path, line)
        if not holding and path not in held.chunks.attributes.paths:
            raise _not_indexed(path)
        chunk_id, vector = _first_with_vector(path, line, [h.chunk_id for h in holding], vectors.vector_of, chosen)
        listed = retrievers.FromSnapshot(held).semantic(chosen, vector[np.newaxis], request.filters, depth)[0]
        notice = view.notice
    else:
        with index.connect(settings.project_root, settings.db_path) as con:
            chosen = embedding_set(index.layout(con, settings.db_path), settings)
            check_languages(index.language_counts(con), request.filters)
            ids = index.chunks_holding(con, path, line)
            if ids is None:
                raise _not_indexed(path)
            chunk_id, vector = _first_with_vector(
                path, line, ids, lambda chunk: index.vector_of(con, chosen, chunk), chosen
            )
            reader = retrievers.FromIndex(con, settings.db_path)
            listed = reader.semantic(chosen, vector[np.newaxis], request.filters, depth)[0]
        notice = None
    return _page(request, [hit for hit in listed if hit.chunk_id != chunk_id], notice)


def _first_with_vector(
    path: str, line: int, ids: list[int], vector_of: Callable[[int], np.ndarray | None], chosen: index.EmbeddingSet
) -> tuple[int, np.ndarray]:
    """The smallest chunk holding the line that has a vector of the configured model, and that vector."""
    if not ids:
        raise BadInputError(f"no indexed chunk of {path} holds line {line} (past its end, or between chunks)")
    for chunk_id in ids:
        vector = vector_of(chunk_id)
        if vector is not None:
            return chunk_id, vector
    raise ModelNotInIndexError(
        f"the chunk at {path}:{line} has no vector of {chosen.provider}/{chosen.model} in the index "
        "(indexed without embeddings?): related needs one; search it by words instead"
    )


def _not_indexed(path: str) -> BadInputError:
    return BadInputError(f"{path} is not in the index: give a file as answers show it (relative to the project)")


def _page(request: Request, hits: list[Hit], notice: str | None) -> Ranked:
    """The page asked for, as a single search pages its list (``engine``)."""
    end = request.offset + request.limit
    return Ranked(ranking.page(hits, request.offset, end), end if len(hits) > end else None, notice)
