"""The lexical index: BM25 (bm25s) over identifier-aware tokens, built once per state of an index file.

Code is searched by the names in it, so a token is an identifier as written (``load_config``, lowercased) and
also each of its parts (``load``, ``config``; ``parseOptions`` gives ``parseoptions``, ``parse``, ``options``):
a query for the whole name finds the definition, a query in words finds it too. A chunk's document is its code,
the name it defines (again: the definition of a name outranks its uses) and its file's path.

Building costs seconds at 80,000 chunks (tokenising and bm25s' index), so a built index is kept in
``derived.STORE`` and also written to the user's cache directory (never into the project), keyed on the index
file's identity: a later process loads it memory-mapped in milliseconds. The DuckDB file is read once per
state, through the caller's short read-only connection, and never held.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from onetool_code import index
from onetool_code.derived import STORE, Key, Signature, folder, publish
from onetool_code.filtering import Attributes
from onetool_code.names import display_name
from onetool_code.schema import Filters

if TYPE_CHECKING:
    import bm25s
    import duckdb

# bm25s' defaults are Lucene's; k1 = 1.2 is the classic value for short documents such as code chunks.
K1, B = 1.2, 0.75
FORMAT = 3  # bump when what is written to the cache directory changes

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
    language_counts: tuple[tuple[str, int, int], ...]
    build_seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        own = self.chunk_ids.nbytes + self.attributes.nbytes
        if self.retriever is None:
            return own
        scores = self.retriever.scores
        matrix = sum(scores[name].nbytes for name in ("data", "indices", "indptr"))
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


def get(con: duckdb.DuckDBPyConnection, db_path: Path) -> LexicalIndex:
    """The lexical index of this state of the file: from memory, from the cache directory, or built now.

    ``con`` is the caller's read-only connection; its lock keeps writers out while the signature is taken.
    """
    signature = Signature.of(db_path)
    lexical = STORE.ensure(
        Key("lexical", str(db_path)), signature, lambda: _load_or_build(con, db_path, signature), demand=1, threshold=1
    )
    assert lexical is not None  # threshold 1: always built
    return lexical


def language_counts(db_path: Path) -> tuple[tuple[str, int, int], ...] | None:
    """What a fresh lexical index knows of the file's languages, without opening it (None: none held)."""
    try:
        signature = Signature.of(db_path)
    except OSError:
        return None
    current = STORE.fresh(Key("lexical", str(db_path)), signature)
    return None if current is None else current.language_counts


def _load_or_build(con: duckdb.DuckDBPyConnection, db_path: Path, signature: Signature) -> LexicalIndex:
    target = folder(Key("lexical", str(db_path)), signature, FORMAT)
    with contextlib.suppress(OSError, ValueError, KeyError):
        return _load(target)
    lexical = build(con)
    _save(lexical, target)
    return lexical


def defined_name(symbol: str, chunk_type: str, code: str) -> str:
    """The name the chunk defines, counted once more in its document so that a definition outranks its uses:
    ChunkHound's symbol when it is a real name, else the one its first lines define, else nothing."""
    name = display_name(symbol, chunk_type, "")
    if name:
        return name
    found = _DEFINED.search("\n".join(code.split("\n", 3)[:3]))
    return next((group for group in found.groups() if group), "") if found else ""


def build(con: duckdb.DuckDBPyConnection) -> LexicalIndex:
    """Tokenise every chunk (each distinct word split once) and index the documents with bm25s."""
    import bm25s

    started = time.perf_counter()
    files = index.cache_files(con)
    position = {file_id: i for i, (file_id, *_) in enumerate(files)}
    path_tokens = [tokens(path) for _, path, *_ in files]
    vocabulary: dict[str, int] = {}
    split: dict[str, list[int]] = {}

    def ids(word: str) -> list[int]:
        known = split.get(word)
        if known is None:
            known = split[word] = [vocabulary.setdefault(t, len(vocabulary)) for t in word_tokens(word)]
        return known

    chunk_ids, file_codes, type_codes, documents = [], [], [], []
    types: dict[str, int] = {}
    for chunk_id, file_id, chunk_type, symbol, code in index.lexical_corpus(con):
        words = _WORD.findall(code or "") + _WORD.findall(defined_name(symbol or "", chunk_type, code or ""))
        document = [i for word in words for i in ids(word)]
        file_code = position[file_id]
        document.extend(vocabulary.setdefault(t, len(vocabulary)) for t in path_tokens[file_code])
        chunk_ids.append(chunk_id)
        file_codes.append(file_code)
        type_codes.append(types.setdefault(str(chunk_type), len(types)))
        documents.append(document)
    retriever = bm25s.BM25(k1=K1, b=B) if documents else None
    if retriever is not None:
        retriever.index((documents, vocabulary), show_progress=False)
    return LexicalIndex(
        retriever=retriever,
        chunk_ids=np.asarray(chunk_ids, dtype=np.int64),
        attributes=Attributes(
            file_codes=np.asarray(file_codes, dtype=np.int32),
            type_codes=np.asarray(type_codes, dtype=np.int32),
            paths=tuple(f[1] for f in files),
            lower_paths=tuple(f[2] for f in files),
            languages=tuple(f[3] for f in files),
            type_names=tuple(types),
        ),
        language_counts=index.language_counts_of(files),
        build_seconds=time.perf_counter() - started,
    )


# -- The cache directory ------------------------------------------------------------------------------------


def _save(lexical: LexicalIndex, target: Path) -> None:
    retriever = lexical.retriever
    if retriever is None:
        return

    def write(into: Path) -> None:
        retriever.save(into, show_progress=False)
        np.save(into / "chunk_ids.npy", lexical.chunk_ids)
        lexical.attributes.save(into)
        (into / "language_counts.json").write_text(json.dumps(lexical.language_counts), encoding="utf-8")

    publish(target, write)


def _load(target: Path) -> LexicalIndex:
    import bm25s

    started = time.perf_counter()
    counts = json.loads((target / "language_counts.json").read_text(encoding="utf-8"))
    retriever = bm25s.BM25.load(target, mmap=True, show_progress=False, verbosity=0)
    return LexicalIndex(
        retriever=retriever,
        chunk_ids=np.load(target / "chunk_ids.npy", mmap_mode="r"),
        attributes=Attributes.load(target),
        language_counts=tuple(tuple(entry) for entry in counts),  # type: ignore[misc]
        build_seconds=time.perf_counter() - started,
    )
