"""The files of a lexical index as BM25 documents (``lexical.LexicalIndex.file_scores``): a file's document is its
live chunks' tokens less the path's that each chunk's document repeats (``lexical.path_document``), so that the
words a file says, not the name it goes by, score it (its name has its own signal: ``ranking.PATH_WORDS``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from onetool_code.index.attributes import Attributes


@dataclass(frozen=True)
class Files:
    """Each file's length (0 for a file with no live chunk); how many files have live chunks and their average
    length; each path token's count in the files' chunk documents (file codes, counts)."""

    lengths: np.ndarray
    count: int
    average: float
    path_tokens: dict[str, tuple[np.ndarray, np.ndarray]]

    @classmethod
    def of(cls, attributes: Attributes, lengths: np.ndarray, path_document: Callable[[str], list[str]]) -> Files:
        """``lengths``: every row's document length, the base's rows then the delta's; ``path_document``: what
        each chunk's document holds of its file's path."""
        codes, paths = attributes.file_codes, attributes.paths
        live = np.ones(codes.size, bool) if attributes.alive is None else attributes.alive
        chunks = np.bincount(codes[live], minlength=len(paths))
        sizes = np.bincount(codes[live], lengths[live], len(paths))
        held: dict[str, tuple[list[int], list[float]]] = {}
        for code in np.flatnonzero(chunks).tolist():
            document = path_document(paths[code])
            sizes[code] -= chunks[code] * len(document)
            for token, times in Counter(document).items():
                files, counts = held.setdefault(token, ([], []))
                files.append(code)
                counts.append(float(chunks[code] * times))
        count = int(np.count_nonzero(chunks))
        average = float(sizes.sum()) / count if count else 1.0
        path_tokens = {token: (np.array(files), np.array(counts)) for token, (files, counts) in held.items()}
        return cls(sizes, count, average, path_tokens)
