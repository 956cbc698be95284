"""The lexical index: BM25 (bm25s) over identifier-aware tokens, built once per state of an index file.

Code is searched by the names in it, so a token is an identifier as written (``load_config``, lowercased) and
also each of its parts (``load``, ``config``; ``parseOptions`` gives ``parseoptions``, ``parse``, ``options``):
a query for the whole name finds the definition, a query in words finds it too. A chunk's document is its code,
the name it defines (again: the definition of a name outranks its uses) and its file's path.

Building costs seconds at 80,000 chunks (tokenising and bm25s' index), so it is part of a snapshot (built
once per state of the index file, from the snapshot's rows, and memory-mapped by every later search).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from onetool_code.derived import heap
from onetool_code.filtering import Attributes
from onetool_code.names import display_name
from onetool_code.rows import ChunkRows
from onetool_code.schema import Filters

if TYPE_CHECKING:
    import bm25s

# bm25s' defaults are Lucene's; k1 = 1.2 is the classic value for short documents such as code chunks.
K1, B = 1.2, 0.75

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# The name a chunk defines, from its first lines, when ChunkHound's symbol is a made-up label
# (``definition_line_144`` for ``export function shallowCopy``): ``def x``, ``function x``, ``class X``, ...,
# ``a.b.x = function``.
_DEFINED = re.compile(
    r"\b(?:def|function\*?|class|interface|type|struct|enum|trait|fn|func|module|record)\s+([A-Za-z_$][\w$]*)|"
    r"^\s*(?:export\s+)?(?:const|let|var)?\s*(?:[\w$]+\.)*([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b",
    re.MULTILINE,
)


def word_tokens(word: str) -> list[str]:
    """``parseHTTPResponse`` -> ``parsehttpresponse``, ``parse``, ``http``, ``response`` (two characters or more)."""
    whole = word.lower()
    out = [whole] if len(whole) > 1 else []
    parts = [p.lower() for piece in word.split("_") for p in _PART.findall(piece)]
    if len(parts) > 1:
        out.extend(p for p in parts if len(p) > 1 and p != whole)
    return out


def tokens(text: str) -> list[str]:
    """Every token of ``text``, in order, repeats kept (they are term frequencies)."""
    return [token for word in _WORD.findall(text) for token in word_tokens(word)]


def query_tokens(query: str) -> list[str]:
    """The query's distinct tokens, in order."""
    return list(dict.fromkeys(tokens(query)))


@dataclass(frozen=True, eq=False)
class LexicalIndex:
    """bm25s' score matrix over one index's chunks; document ``i`` is chunk ``chunk_ids[i]``."""

    retriever: bm25s.BM25 | None  # None for an index without chunks (bm25s cannot index nothing)
    chunk_ids: np.ndarray  # int64
    attributes: Attributes

    @property
    def nbytes(self) -> int:
        own = heap(self.chunk_ids) + self.attributes.nbytes
        if self.retriever is None:
            return own
        scores = self.retriever.scores
        matrix = heap(*(scores[name] for name in ("data", "indices", "indptr")))
        vocabulary = sum(len(token) + 80 for token in self.retriever.vocab_dict)  # str and dict entry
        return own + matrix + vocabulary

    def rank(self, token_lists: Sequence[Sequence[str]], filters: Filters, limit: int) -> list[list[tuple[int, float]]]:
        """The best ``limit`` (chunk id, BM25 score) per query, best first; ties by path, then chunk id."""
        if self.retriever is None:
            return [[] for _ in token_lists]
        rows = self.attributes.rows(filters)
        mask = None
        if rows is not None:
            mask = np.zeros(self.chunk_ids.size, dtype=np.float32)
            mask[rows] = 1.0
        vocabulary = self.retriever.vocab_dict
        ranked = []
        for query in token_lists:
            ids = [vocabulary[t] for t in query if t in vocabulary]
            if not ids:
                ranked.append([])
                continue
            scores = self.retriever.get_scores_from_ids(ids, weight_mask=mask)
            found = np.flatnonzero(scores > 0)
            if found.size > limit:
                kth = np.partition(scores[found], found.size - limit)[found.size - limit]
                found = found[scores[found] >= kth]
            order = np.lexsort((self.chunk_ids[found], self.attributes.file_codes[found], -scores[found]))[:limit]
            ranked.append([(int(self.chunk_ids[found[i]]), float(scores[found[i]])) for i in order])
        return ranked


def defined_name(symbol: str, chunk_type: str, code: str) -> str:
    """The name the chunk defines, counted once more in its document so that a definition outranks its uses:
    ChunkHound's symbol when it is a real name, else the one its first lines define, else nothing."""
    name = display_name(symbol, chunk_type, "")
    if name:
        return name
    found = _DEFINED.search("\n".join(code.split("\n", 3)[:3]))
    return next((group for group in found.groups() if group), "") if found else ""


def build(chunks: ChunkRows) -> LexicalIndex:
    """Tokenise every chunk (each distinct word split once) and index the documents with bm25s."""
    import bm25s

    path_tokens = [tokens(path) for path in chunks.attributes.paths]
    vocabulary: dict[str, int] = {}
    split: dict[str, list[int]] = {}

    def ids(word: str) -> list[int]:
        known = split.get(word)
        if known is None:
            known = split[word] = [vocabulary.setdefault(t, len(vocabulary)) for t in word_tokens(word)]
        return known

    documents = []
    for file_code, (chunk_type, symbol, code) in zip(chunks.attributes.file_codes, chunks.texts(), strict=True):
        words = _WORD.findall(code) + _WORD.findall(defined_name(symbol, chunk_type, code))
        document = [i for word in words for i in ids(word)]
        document.extend(vocabulary.setdefault(t, len(vocabulary)) for t in path_tokens[file_code])
        documents.append(document)
    retriever = bm25s.BM25(k1=K1, b=B) if documents else None
    if retriever is not None:
        retriever.index((documents, vocabulary), show_progress=False)
    return LexicalIndex(retriever, chunks.chunk_ids, chunks.attributes)


def save(lexical: LexicalIndex, into: Path) -> None:
    """bm25s' own files (memory-mappable arrays and the vocabulary); the ids and attributes are the snapshot's."""
    if lexical.retriever is not None:
        lexical.retriever.save(into, show_progress=False)


def load(folder: Path, chunks: ChunkRows) -> LexicalIndex:
    import bm25s

    retriever = bm25s.BM25.load(folder, mmap=True, show_progress=False, verbosity=0) if len(chunks) else None
    return LexicalIndex(retriever, chunks.chunk_ids, chunks.attributes)
