"""``related``: more code like a place already found, ranked by the stored vector of the chunk there.

No embeddings request: the index already holds every chunk's vector (the snapshot maps them), so the
chunk's own vector is the query and the order is exactly that of a semantic search whose query vector it is
(ChunkHound's SQL with snapshots off). Every chunk that holds the asked line is left out of the answer, not only
the one whose vector is the query: the function or class around that line is the place itself, not code like it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import numpy as np

from onetool_code import advice, index
from onetool_code.errors import BadInputError, ModelNotInIndexError
from onetool_code.hits import Hit
from onetool_code.project.placement import file_range
from onetool_code.project.source import FileText, SourceFiles, Unread
from onetool_code.request import Request
from onetool_code.search import engine, overlay_vectors, query_vectors, transport
from onetool_code.search.engine import Ranked
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
    """The page of chunks most like the chunk at ``file``:``line`` (the smallest holding that line, in the file's
    own numbers, as answers show them), less every chunk that holds that line."""
    path = indexed_path(settings.project_root, file)
    text = SourceFiles(settings.project_root).read(path)

    def like(view: index.View) -> Ranked:
        instead = f"related ranks by stored vectors; search by words instead: {advice.search_in_words()}"
        chosen = query_vectors.embedding_set(view.layout, settings, without=instead)
        view.check_languages(request.filters)
        view, unembedded = overlay_vectors.joined(settings, view, chosen, transport.Budget(settings.timeout))
        with view.reader() as reader:
            if reader.holding(path, line) is None:
                raise _not_indexed(path)
            holding = _holding(lambda number: reader.holding(path, number) or [], text, line)
            vector = _first_with_vector(path, line, holding, lambda chunk: reader.vector_of(chosen, chunk), chosen)
            # A search's depth, and one more for each chunk left out.
            depth = request.depth + len(holding)
            listed = reader.semantic(chosen, vector[np.newaxis], request.filters, depth, exact=True)[0]
        around = set(holding)
        notice = "; ".join(n for n in (view.notice, unembedded) if n) or None
        return engine.paged(request, [hit for hit in listed if hit.chunk_id not in around], notice)

    return index.open(settings).search(like)


def _holding(hits_at: Callable[[int], list[Hit]], text: FileText | Unread, line: int) -> list[int]:
    """The ids of the chunks whose lines hold the file's line ``line``, the smallest first. ChunkHound numbers a
    file's lines without its leading blank ones, our indexer does not: each chunk at either number is placed in
    the file as answers place it (``placement.file_range``)."""
    if isinstance(text, Unread):
        return [hit.chunk_id for hit in hits_at(line)]
    found = {hit.chunk_id: hit for number in dict.fromkeys((line, text.to_chunkhound(line))) for hit in hits_at(number)}
    placed = {chunk_id: file_range(hit, text) for chunk_id, hit in found.items()}
    held = [hit for hit in found.values() if placed[hit.chunk_id][0] <= line <= placed[hit.chunk_id][1]]
    held.sort(key=lambda hit: (hit.end_line - hit.start_line, hit.start_line, hit.chunk_id))
    return [hit.chunk_id for hit in held]


def _first_with_vector(
    path: str, line: int, ids: list[int], vector_of: Callable[[int], np.ndarray | None], chosen: index.EmbeddingSet
) -> np.ndarray:
    """The vector of the configured model of the smallest chunk holding the line that has a usable one. A vector
    of zeros or NaN has no cosine with anything: as the query, it would tie every chunk, in path order."""
    if not ids:
        raise BadInputError(f"no indexed chunk of {path} holds line {line} (past its end, or between chunks)")
    for chunk_id in ids:
        vector = vector_of(chunk_id)
        if vector is not None and np.isfinite(vector).all() and vector.any():
            return vector
    raise ModelNotInIndexError(
        f"the chunk at {path}:{line} has no usable vector of {chosen.provider}/{chosen.model} in the index "
        "(indexed without embeddings, or by a broken model): related needs one; search by words instead: "
        f"{advice.search_in_words()}"
    )


def _not_indexed(path: str) -> BadInputError:
    return BadInputError(f"{path} is not in the index: give a file as answers show it (relative to the project)")
