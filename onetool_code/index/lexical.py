"""The lexical index: BM25 (bm25s) over identifier-aware tokens (``names.tokens``), built once per state of an
index file.

Code is searched by the names in it, so a token is an identifier as written (``load_config``, lowercased) and
also each of its parts (``load``, ``config``; ``parseOptions`` gives ``parseoptions``, ``parse``, ``options``),
each by its English stem, so that a question's words meet the code's (``validators``, ``ValidateStruct``:
``valid``): a query for the whole name finds the definition, a query in words finds it too. A chunk's document is
its code, the name it defines (again: the definition of a name outranks its uses), its file's name twice and the
names of the nearest folders (a file named for what is asked about is likely the place).

Building costs seconds at 80,000 chunks (tokenising and bm25s' index), so it is part of a snapshot (built
once per state of the index file, from the snapshot's rows, and memory-mapped by every later search).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from onetool_code.index.attributes import Attributes
from onetool_code.index.lexical_files import Files
from onetool_code.index.rows import ChunkRows
from onetool_code.index.store import heap
from onetool_code.names import defined_name, tokens, word_tokens, words
from onetool_code.schema import Filters

if TYPE_CHECKING:
    import bm25s

# bm25s' defaults are Lucene's; k1 = 1.2 is the classic value for short documents such as code chunks.
K1, B = 1.2, 0.75


@dataclass(frozen=True, eq=False)
class Postings:
    """A delta's documents, token by token: which of them hold it and how often, with every document's length.
    A few hundred documents: scored here, at query time, with the whole index's statistics."""

    tokens: dict[str, tuple[np.ndarray, np.ndarray]]  # token -> (documents, term frequencies)
    lengths: np.ndarray  # float64, tokens per document

    @classmethod
    def of(cls, documents: Sequence[Sequence[str]]) -> Postings:
        vocabulary: dict[str, int] = {}
        ids = np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for d in documents for t in d), np.int64)
        lengths = np.fromiter((len(d) for d in documents), np.int64, len(documents))
        count = max(len(documents), 1)
        pairs, frequencies = np.unique(ids * count + np.repeat(np.arange(len(documents)), lengths), return_counts=True)
        token_ids, docs = np.divmod(pairs, count)
        bounds = np.searchsorted(token_ids, np.arange(len(vocabulary) + 1))
        tokens = {
            t: (docs[bounds[i] : bounds[i + 1]], frequencies[bounds[i] : bounds[i + 1]].astype(np.float64))
            for t, i in vocabulary.items()
        }
        return cls(tokens, lengths.astype(np.float64))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes + b.nbytes + len(t) + 80 for t, (a, b) in self.tokens.items()) + self.lengths.nbytes


@dataclass(frozen=True)
class _Held:
    """The documents of the base and of the delta that hold one token (``LexicalIndex._held``)."""

    base_docs: np.ndarray | None
    base_values: np.ndarray | None
    base_df: int
    added: tuple[np.ndarray, np.ndarray] | None  # the delta's documents and term frequencies
    df: int  # live documents


@dataclass(frozen=True, eq=False)
class LexicalIndex:
    """BM25 over one index's chunks: bm25s' score matrix over a snapshot's base (document ``i`` is chunk
    ``chunk_ids[i]``), and, in a snapshot refreshed by a delta, the base's dead documents (``attributes.alive``)
    and the delta's documents after them (``added``).

    Scores are the whole index's: each term's idf is taken from the live documents (bm25s' Lucene idf over
    their count and the term's document frequency), by rescaling the base's precomputed term scores and scoring
    the delta's with the same formula. One thing is the base's: the average document length its term scores
    were computed with. A full rebuild's differs by ``drift``, and each score of a base document then differs
    from a full rebuild's by a relative ``|drift| / (1 - |drift|)`` at most (BM25's length normalisation is
    ``tf / (tf + k1 (1 - b + b dl / avgdl))``: moving avgdl by a factor ``1 + e`` moves it by less than ``|e|``
    relative, in either direction); the delta's scores are exact. A refresh whose drift passes ``MAX_DRIFT``
    rebuilds the whole snapshot instead.
    """

    retriever: bm25s.BM25 | None  # None for a base without chunks (bm25s cannot index nothing)
    chunk_ids: np.ndarray  # int64
    attributes: Attributes
    lengths: np.ndarray  # the base's document lengths
    added: Postings | None = None
    files: Path | None = None  # the folder of its files, when a child process wrote them (``lexical_process``)

    @property
    def nbytes(self) -> int:
        own = heap(self.chunk_ids, self.lengths) + self.attributes.nbytes
        own += 0 if self.added is None else self.added.nbytes
        if self.retriever is None:
            return own
        scores = self.retriever.scores
        matrix = heap(*(scores[name] for name in ("data", "indices", "indptr")))
        return own + matrix + self._vocabulary_bytes

    @property
    def _vocabulary_bytes(self) -> int:
        """The vocabulary's strings and dict entries, estimated (summing 100,000 tokens' lengths took 0.2 s)."""
        return 90 * len(self.retriever.vocab_dict) if self.retriever is not None else 0

    @functools.cached_property
    def _statistics(self) -> tuple[int, float, float, np.ndarray | None]:
        """(live documents, their average length, the base's average length, the base's dead documents)."""
        base = int(self.lengths.size)
        alive = self.attributes.alive
        dead = None if alive is None or bool(alive[:base].all()) else ~alive[:base]
        live_lengths = self.lengths if dead is None else self.lengths[~dead]
        added = np.zeros(0) if self.added is None else self.added.lengths
        count = int(live_lengths.size + added.size)
        average = (float(live_lengths.sum()) + float(added.sum())) / count if count else 1.0
        return count, average, float(self.lengths.mean()) if base else 1.0, dead

    @property
    def drift(self) -> float:
        """The live documents' average length over the one the base's scores were computed with, minus 1."""
        _, average, base_average, _ = self._statistics
        return average / base_average - 1.0

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        """Every document's BM25 score (float32) for these distinct query tokens."""
        count, average, _, _ = self._statistics
        base = int(self.lengths.size)
        out = np.zeros(self.chunk_ids.size, dtype=np.float32)
        for token in tokens:
            found = self._held(token)
            if found.df == 0:
                continue
            idf = _idf(found.df, count)
            if found.base_docs is not None:
                assert found.base_values is not None
                out[found.base_docs] += found.base_values * np.float32(idf / _idf(found.base_df, base))
            if found.added is not None:
                assert self.added is not None
                docs, tf = found.added
                norm = K1 * (1 - B + B * self.added.lengths[docs] / average)
                out[base + docs] += (idf * tf / (tf + norm)).astype(np.float32)
        return out

    def file_scores(self, tokens: Sequence[str]) -> dict[str, float]:
        """Each file's BM25 score as one document (``lexical_files``), with the files' own idf and average length:
        what the words say of a file as a whole, where the chunks' scores say where in it. The base's term
        frequencies are read back from its stored scores (``_retriever`` wrote ``idf * tf / (tf + norm)``, to
        float32: exact once rounded); the delta's are its postings'."""
        files = self._files
        base, codes, alive = int(self.lengths.size), self.attributes.file_codes, self.attributes.alive
        norm = K1 * ((1 - B) + B * files.lengths / files.average)
        totals = np.zeros(files.lengths.size)
        for token in dict.fromkeys(tokens):
            held = self._held(token)
            tf = np.zeros(files.lengths.size)
            if held.base_docs is not None and held.base_values is not None:
                docs, values = held.base_docs, held.base_values
                if alive is not None:
                    kept = alive[docs]
                    docs, values = docs[kept], values[kept]
                share = values / np.float32(_idf(held.base_df, base))
                stored = K1 * ((1 - B) + B * self.lengths[docs] / self._statistics[2])
                tf += np.bincount(codes[docs], np.rint(stored * share / (1 - share)), tf.size)
            if held.added is not None:
                docs, frequencies = held.added
                rows = base + docs
                if alive is not None:
                    kept = alive[rows]
                    rows, frequencies = rows[kept], frequencies[kept]
                tf += np.bincount(codes[rows], frequencies, tf.size)
            in_paths = files.path_tokens.get(token)
            if in_paths is not None:
                tf[in_paths[0]] -= in_paths[1]
            np.maximum(tf, 0.0, out=tf)
            df = int(np.count_nonzero(tf))
            if df:
                totals += _idf(df, files.count) * tf / (tf + norm)
        paths = self.attributes.paths
        return {paths[code]: float(totals[code]) for code in np.flatnonzero(totals)}

    @functools.cached_property
    def _files(self) -> Files:
        lengths = self.lengths if self.added is None else np.concatenate([self.lengths, self.added.lengths])
        return Files.of(self.attributes, lengths, path_document)

    def shares(self, tokens: Sequence[str]) -> dict[str, float]:
        """Each token's share of the live documents that hold it: how much of this index is about it."""
        count = self._statistics[0]
        return {token: self._held(token).df / count if count else 0.0 for token in tokens}

    def _held(self, token: str) -> _Held:
        """The documents that hold ``token``: the base's (with its precomputed term scores), the delta's, and
        how many of them are live."""
        _, _, _, dead = self._statistics
        column = self.retriever.vocab_dict.get(token) if self.retriever is not None else None
        added = self.added.tokens.get(token) if self.added is not None else None
        base_docs = base_values = None
        base_df = 0
        if column is not None:
            assert self.retriever is not None
            matrix = self.retriever.scores
            low, high = int(matrix["indptr"][column]), int(matrix["indptr"][column + 1])
            base_docs, base_values = matrix["indices"][low:high], matrix["data"][low:high]
            base_df = high - low
        live_df = base_df - (
            int(np.count_nonzero(dead[base_docs])) if dead is not None and base_docs is not None else 0
        )
        return _Held(base_docs, base_values, base_df, added, live_df + (0 if added is None else int(added[0].size)))

    def rank(self, token_lists: Sequence[Sequence[str]], filters: Filters, limit: int) -> list[list[tuple[int, float]]]:
        """The best ``limit`` (chunk id, BM25 score) per query, best first; ties by path, then chunk id."""
        rows = self.attributes.rows(filters)
        ranked = []
        for query in token_lists:
            scores = self.scores(query)
            if rows is not None:
                kept = np.zeros(scores.size, dtype=bool)
                kept[rows] = True
                scores[~kept] = 0.0
            found = np.flatnonzero(scores > 0)
            if found.size > limit:
                kth = np.partition(scores[found], found.size - limit)[found.size - limit]
                found = found[scores[found] >= kth]
            order = np.lexsort((self.chunk_ids[found], self.attributes.file_codes[found], -scores[found]))[:limit]
            ranked.append([(int(self.chunk_ids[found[i]]), float(scores[found[i]])) for i in order])
        return ranked

    def joined(self, delta: ChunkRows, attributes: Attributes, chunk_ids: np.ndarray) -> LexicalIndex:
        """This base with the delta's chunks after it; ``attributes`` and ``chunk_ids``: the joined rows'."""
        documents, _ = _documents(delta)
        return LexicalIndex(self.retriever, chunk_ids, attributes, self.lengths, Postings.of(documents))


def _idf(df: int, count: int) -> float:
    """bm25s' Lucene idf, in float64 as bm25s computes it."""
    return math.log(1 + (count - df + 0.5) / (df + 0.5))


def _documents(chunks: ChunkRows) -> tuple[list[list[str]], int]:
    """Every chunk's document (its code's tokens, its defined name's again, its path's), and how many distinct
    words were split (each once)."""
    paths = chunks.attributes.paths
    path_tokens: dict[int, list[str]] = {}  # a delta's rows name a few of the index's files: only those are split
    split: dict[str, list[str]] = {}

    def parts(word: str) -> list[str]:
        known = split.get(word)
        if known is None:
            known = split[word] = word_tokens(word)
        return known

    documents = []
    for file_code, (chunk_type, symbol, code) in zip(chunks.attributes.file_codes, chunks.texts(), strict=True):
        found = words(code) + words(defined_name(symbol, chunk_type, code))
        code_of = int(file_code)
        if code_of not in path_tokens:
            path_tokens[code_of] = path_document(paths[code_of])
        documents.append([t for word in found for t in parts(word)] + path_tokens[code_of])
    return documents, len(split)


STEM_REPEATS = 2  # the file's name counts this many times in each of its chunks' documents
FOLDERS = 3  # ... and the names of the folders it sits in, this many from the file up


def path_document(path: str) -> list[str]:
    """What a chunk's document holds of its file's path: the file's name, twice (a file named for what the query
    asks about is likely the place: ``binding/json.go``), and the nearest folders' names, once."""
    posix = PurePosixPath(path)
    folders = [part for part in posix.parent.parts if part not in ("/", ".")][-FOLDERS:]
    return tokens(posix.name.lstrip(".").split(".")[0]) * STEM_REPEATS + tokens(" ".join(folders))


class _Words(dict[str, int]):
    """Each distinct word's number, its token ids split once and kept in one list (``tokens``, cut by ``ends``):
    a document is its words' numbers, one dict look-up each, and its tokens are gathered by numpy a batch at a
    time; a million chunks' documents are never held as lists of tokens. New tokens are numbered in
    ``vocabulary``; a file's path document is one more "word" (keyed by a NUL, which no word holds)."""

    def __init__(self, vocabulary: dict[str, int]) -> None:
        super().__init__()
        self.vocabulary = vocabulary
        self.tokens: list[int] = []
        self.ends: list[int] = []
        self._arrays = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def __missing__(self, word: str) -> int:
        return self.add(word, word_tokens(word))

    def add(self, key: str, found: list[str]) -> int:
        vocabulary = self.vocabulary
        self.tokens += [vocabulary.setdefault(t, len(vocabulary)) for t in found]
        self.ends.append(len(self.tokens))
        number = self[key] = len(self.ends) - 1
        return number

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``tokens`` and ``ends`` as numpy arrays; only the words added since the last call are converted."""
        tokens, ends = self._arrays
        self._arrays = (
            np.concatenate([tokens, np.array(self.tokens[tokens.size :], dtype=np.int64)]),
            np.concatenate([ends, np.array(self.ends[ends.size :], dtype=np.int64)]),
        )
        return self._arrays


def build(chunks: ChunkRows) -> LexicalIndex:
    """Tokenise every chunk (the documents of ``_documents``, as token ids) and score them as bm25s' own index
    would, ``BATCH`` documents at a time: only their postings are kept, as numpy arrays (bm25s' ``index`` holds
    every document's token list and builds its matrix from copies of them: gigabytes at a million chunks)."""
    vocabulary: dict[str, int] = {}
    numbers = _Words(vocabulary)
    paths = chunks.attributes.paths
    count = int(chunks.chunk_ids.size)
    lengths = np.zeros(count, dtype=np.int64)
    postings: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    rows = zip(chunks.attributes.file_codes.tolist(), chunks.texts(), strict=True)
    for first in range(0, count, BATCH):
        numbered: list[int] = []
        sizes: list[int] = []
        for file_code, (chunk_type, symbol, code) in itertools.islice(rows, BATCH):
            key = f"\0{file_code}"
            path = numbers[key] if key in numbers else numbers.add(key, path_document(paths[file_code]))
            found = words(code) + words(defined_name(symbol, chunk_type, code))
            numbered += map(numbers.__getitem__, found)
            numbered.append(path)
            sizes.append(len(found) + 1)
        terms, documents = _gathered(numbers, numbered, sizes)
        lengths[first : first + len(sizes)] = np.bincount(documents, minlength=len(sizes))
        postings.append(_postings(terms, documents, len(sizes), first))
    retriever = _retriever(postings, lengths, vocabulary) if count else None
    return LexicalIndex(retriever, chunks.chunk_ids, chunks.attributes, lengths.astype(np.float64))


BATCH = 20_000  # documents tokenised between two conversions of their words to postings


def _gathered(numbers: _Words, numbered: list[int], sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The token ids of a batch's words (``numbered``, document after document, ``sizes`` words each), and the
    document of each."""
    held, ends = numbers.arrays()
    word = np.array(numbered, dtype=np.int64)
    stops = ends[word]
    spans = stops - np.where(word > 0, ends[word - 1], 0)
    before = np.cumsum(spans) - spans
    at = np.repeat(stops - spans - before, spans) + np.arange(int(spans.sum()))
    documents = np.repeat(np.repeat(np.arange(len(sizes)), sizes), spans)
    return held[at], documents


def _postings(
    terms: np.ndarray, documents: np.ndarray, count: int, first: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(token ids, documents numbered from ``first``, term frequencies) of ``count`` documents' tokens, by token
    then document."""
    keys, frequencies = np.unique(terms * count + documents, return_counts=True)
    terms, local = np.divmod(keys, count)
    return terms.astype(np.int32), (local + first).astype(np.int32), frequencies.astype(np.int32)


def _retriever(
    postings: list[tuple[np.ndarray, np.ndarray, np.ndarray]], lengths: np.ndarray, vocabulary: dict[str, int]
) -> bm25s.BM25:
    """bm25s' index of these postings, its score matrix (one column per token, Lucene BM25 in float32) computed
    with bm25s' own operations in bm25s' order, so that its scores are bm25s' to the bit; the postings are used
    up (emptied) as they are written."""
    import bm25s

    width = len(vocabulary)
    frequencies = np.zeros(width, dtype=np.int64)
    for held, _, _ in postings:
        frequencies += np.bincount(held, minlength=width)
    pointers = np.zeros(width + 1, dtype=np.int64)
    np.cumsum(frequencies, out=pointers[1:])
    by_df = {int(df): np.float32(_idf(int(df), lengths.size)) for df in np.unique(frequencies) if df}
    idf = np.fromiter((by_df.get(int(df), 0.0) for df in frequencies), np.float32, width)
    average = lengths.mean()  # bm25s' average: of the integer lengths
    own = lengths.astype(np.float64)
    data = np.empty(int(pointers[-1]), dtype=np.float32)
    indices = np.empty(int(pointers[-1]), dtype=np.int32)
    heads = pointers[:-1].copy()
    while postings:
        terms, documents, counts = postings.pop(0)
        places = heads[terms] + (np.arange(terms.size) - np.searchsorted(terms, terms))
        tf = counts.astype(np.float64)
        tfc = tf / (K1 * ((1 - B) + B * own[documents] / average) + tf)
        data[places] = idf[terms] * tfc
        indices[places] = documents
        heads += np.bincount(terms, minlength=width)
    retriever = bm25s.BM25(k1=K1, b=B)
    if "" not in vocabulary:
        vocabulary[""] = max(vocabulary.values(), default=-1) + 1  # as bm25s' ``index`` adds it
    retriever.scores = {"data": data, "indices": indices, "indptr": pointers, "num_docs": int(lengths.size)}
    retriever.vocab_dict = vocabulary
    retriever.nonoccurrence_array = None
    return retriever


def save(lexical: LexicalIndex, into: Path) -> None:
    """bm25s' own files (memory-mappable arrays and the vocabulary) and the document lengths; the ids and
    attributes are the snapshot's. An index a child process wrote has its files moved (one file system: the
    cache directory), not written again."""
    if lexical.files is not None:
        for path in lexical.files.iterdir():
            path.replace(into / path.name)
        return
    np.save(into / "lengths.npy", lexical.lengths)
    if lexical.retriever is not None:
        lexical.retriever.save(into, show_progress=False)


def load(folder: Path, chunks: ChunkRows) -> LexicalIndex:
    import bm25s

    retriever = bm25s.BM25.load(folder, mmap=True, show_progress=False, verbosity=0) if len(chunks) else None
    return LexicalIndex(retriever, chunks.chunk_ids, chunks.attributes, np.load(folder / "lengths.npy", mmap_mode="r"))
