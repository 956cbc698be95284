"""Every chunk row a search can show, columnar: what a snapshot answers from instead of the index file.

A search shows a handful of chunks, found by id; ``regex`` scans them all. So the rows are numpy arrays in
chunk id order (found by binary search) with each chunk's code and symbol in one UTF-8 blob sliced by offsets,
saved as ``.npy`` files that every process maps: nothing is decoded until a hit needs it. Per file: its path,
language and the state its ``files`` row recorded (shaping compares it with the file on disk).

Rows hold exactly what ``schema.CHUNKS_BY_ID_SQL`` would return (chunks whose file row exists), and
``regex`` answers as ``schema.regex_sql`` does: RE2 (DuckDB's own regex engine, through google-re2), in
``schema.TIE_BREAK`` order.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onetool_code.errors import BadInputError
from onetool_code.hits import FileRow, FileState, Hit
from onetool_code.index import spill
from onetool_code.index.attributes import Attributes
from onetool_code.index.store import heap
from onetool_code.names import PART_SUFFIX, definition_lines
from onetool_code.schema import Filters

NOT_A_PATTERN = "query is not a valid regular expression (RE2 syntax, no lookaround or backreferences)"
_PART_SUFFIX = re.compile(PART_SUFFIX.encode())  # bytes: ``\d`` is ``[0-9]``
_TRAILING_PARTS = re.compile(PART_SUFFIX.encode() + rb"\Z")
_ARRAYS = ("chunk_ids", "start_lines", "end_lines", "order", "name_keys")
FORGET_EVERY = 50_000  # rows read in order between two ``Texts.forget_pages``
FORGET_EVERY_READ = 1024  # ... and rows read here and there


@dataclass(frozen=True, eq=False)
class Texts:
    """Strings as UTF-8 blobs cut by cumulative ends (string ``i`` of a part is ``blob[ends[i - 1]:ends[i]]``):
    nothing is decoded until a hit needs it. A snapshot refreshed by a delta has two parts, its base's (mapped)
    and the delta's."""

    parts: tuple[tuple[np.ndarray, np.ndarray], ...]  # (uint8 blob, int64 ends) per part

    def raw(self, i: int) -> bytes:
        for blob, ends in self._plain:
            if i < ends.size:
                return blob[int(ends[i - 1]) if i else 0 : int(ends[i])].tobytes()
            i -= int(ends.size)
        raise IndexError(i)

    @functools.cached_property
    def _plain(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The parts as plain arrays over the same memory: slicing a ``np.memmap`` costs microseconds of subclass
        bookkeeping, and a code scan slices thousands of chunks (``nbytes`` still sees the mapped ones)."""
        return tuple((blob.view(np.ndarray), ends.view(np.ndarray)) for blob, ends in self.parts)

    def __getitem__(self, i: int) -> str:
        return self.raw(i).decode("utf-8")

    def forget_pages(self) -> None:
        """``spill.forget_pages`` of every mapped part."""
        for blob, ends in self.parts:
            spill.forget_pages(blob)
            spill.forget_pages(ends)

    def __add__(self, other: Texts) -> Texts:
        return Texts(self.parts + other.parts)

    @property
    def nbytes(self) -> int:
        return heap(*(array for part in self.parts for array in part))

    def save(self, into: Path, name: str) -> None:
        (blob, ends), *more = self.parts
        assert not more, "a snapshot saves one part"
        spill.save(blob, into / f"{name}.npy")  # a first read's is moved, not copied
        np.save(into / f"{name}_ends.npy", ends)

    @classmethod
    def load(cls, folder: Path, name: str) -> Texts:
        return cls(
            ((np.load(folder / f"{name}.npy", mmap_mode="r"), np.load(folder / f"{name}_ends.npy", mmap_mode="r")),)
        )


@dataclass(frozen=True, eq=False)
class ChunkRows:
    """Entry ``i`` of every per-chunk array (and of ``attributes``) is one chunk; in a snapshot read whole, the
    chunk with the ``i``-th smallest id. A snapshot refreshed by a delta joins its base's rows (the dead ones
    marked in ``attributes.alive``) and the delta's (``joined``); ``by_id`` then finds live rows by id."""

    chunk_ids: np.ndarray  # int64, ascending in each part
    attributes: Attributes
    start_lines: np.ndarray  # int64, 0 where the index holds NULL
    end_lines: np.ndarray  # int64, 0 where the index holds NULL
    symbols: Texts
    code: Texts
    order: np.ndarray  # int64: the rows in TIE_BREAK order (path, start line with NULL last, chunk id)
    name_keys: np.ndarray  # uint32: ``name_key`` of each symbol, what ``defining`` looks a name up by
    file_states: tuple[FileState, ...]
    by_id: np.ndarray | None = None  # the live rows in chunk id order, when the ids are not one ascending run

    @property
    def nbytes(self) -> int:
        arrays = [getattr(self, name) for name in _ARRAYS] + ([] if self.by_id is None else [self.by_id])
        return heap(*arrays) + self.symbols.nbytes + self.code.nbytes + self.attributes.nbytes

    def __len__(self) -> int:
        """Live chunks."""
        alive = self.attributes.alive
        return int(self.chunk_ids.size if alive is None else np.count_nonzero(alive))

    def hits(self, ranked: Sequence[tuple[int, float]]) -> list[Hit]:
        """(chunk id, score) pairs as hits, in the order given; every id must be a live row of this snapshot."""
        wanted = np.fromiter((c for c, _ in ranked), np.int64, len(ranked))
        if self.by_id is None:
            positions = np.searchsorted(self.chunk_ids, wanted)
        else:
            positions = self.by_id[np.searchsorted(self.chunk_ids[self.by_id], wanted)]
        return self._hits(positions, [score for _, score in ranked])

    def holding(self, path: str, line: int) -> list[Hit]:
        """The live chunks of ``path`` whose lines hold ``line``, the smallest first (then by start line and id):
        what ``schema.CHUNKS_HOLDING_SQL`` finds in the index file."""
        if path not in self.attributes.paths:
            return []
        code = self.attributes.paths.index(path)
        rows = np.flatnonzero(
            (self.attributes.file_codes == code) & (self.start_lines <= line) & (self.end_lines >= line)
        )
        alive = self.attributes.alive
        if alive is not None:
            rows = rows[alive[rows]]
        spans = self.end_lines[rows] - self.start_lines[rows]
        order = np.lexsort((self.chunk_ids[rows], self.start_lines[rows], spans))
        return [self._hit(int(rows[i]), 1.0) for i in order]

    def regex(self, pattern: str, filters: Filters, limit: int) -> list[Hit]:
        """The first ``limit`` chunks whose code matches, in TIE_BREAK order, scored 1.0 as ChunkHound's are."""
        import re2

        try:
            compiled = _re2(pattern.encode())
        except re2.error as exc:
            reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
            raise BadInputError(f"{NOT_A_PATTERN}: {reason}") from exc
        kept = self.attributes.rows(filters)
        allowed = None if kept is None else np.zeros(self.chunk_ids.size, dtype=bool)
        if allowed is not None:
            allowed[kept] = True
        found: list[Hit] = []
        for row in self.order:
            if len(found) >= limit:
                break
            if allowed is not None and not allowed[row]:
                continue
            if compiled.search(self.code.raw(int(row))):
                found.append(self._hit(int(row), 1.0))
        self.code.forget_pages()
        return found

    def defining(self, names: Sequence[str], filters: Filters, limit: int, candidates: np.ndarray) -> list[Hit]:
        """The first ``limit`` chunks that define one of ``names`` (lowercase identifiers), in TIE_BREAK order, as
        ``schema.defining_sql`` finds them: named so, however ChunkHound cut them (``bulk_create_part1_part2``), or
        holding a line that defines one (ChunkHound puts short methods into their neighbour's chunk, named after the
        neighbour). Only the ``candidates`` rows' code is read."""
        if not names:
            return []
        kept = self.attributes.rows(filters)
        allowed = None if kept is None else np.zeros(self.chunk_ids.size, dtype=bool)
        if allowed is not None:
            allowed[kept] = True
        found = {row for row in self._named(names) if allowed is None or allowed[row]}
        pattern = _re2(definition_lines(names).encode())  # RE2: linear, and 30x faster than re here (2 KB chunks)
        for k, row in enumerate(candidates.tolist()):
            if row not in found and (allowed is None or allowed[row]) and pattern.search(self.code.raw(row)):
                found.add(row)
            if k % FORGET_EVERY_READ == FORGET_EVERY_READ - 1:
                self.code.forget_pages()  # tens of thousands of candidates at a million chunks, 64 KB mapped each
        self.code.forget_pages()  # what a search reads of the code stays the page cache's, not the process's
        order = sorted(found, key=self._tie_break_key)[:limit]
        return self._hits(np.asarray(order, dtype=np.int64), [1.0] * len(order))

    def _named(self, names: Sequence[str]) -> list[int]:
        """Rows whose symbol, its ``_partN`` suffixes removed and lowercased, is one of ``names``: the rows whose
        ``name_keys`` are the name's (a symbol named so has the name's key), then each of those read."""
        found = []
        for name in {n.encode() for n in names}:
            for row in np.flatnonzero(self.name_keys == name_key(name)).tolist():
                symbol = self.symbols.raw(row).lower()  # ASCII only, as names are
                rest = symbol[len(name) :]
                if symbol.startswith(name) and (not rest or _PART_SUFFIX.fullmatch(rest)):
                    found.append(row)
        alive = self.attributes.alive
        return [row for row in found if alive is None or alive[row]]

    def _tie_break_key(self, row: int) -> tuple[int, bool, int, int]:
        """TIE_BREAK: path (files are numbered in path order), start line with NULL (0) last, chunk id."""
        start = int(self.start_lines[row])
        return int(self.attributes.file_codes[row]), start == 0, start, int(self.chunk_ids[row])

    def _hits(self, rows: np.ndarray, scores: Sequence[float]) -> list[Hit]:
        """``_hit`` for many rows at once: each column read once for all of them, not element by element from
        its memory map (a hybrid search makes about 900 hits)."""
        rows = np.asarray(rows, dtype=np.int64)
        attributes = self.attributes
        codes = attributes.file_codes[rows].tolist()
        type_codes = attributes.type_codes[rows].tolist()
        starts, ends = self.start_lines[rows].tolist(), self.end_lines[rows].tolist()
        ids = self.chunk_ids[rows].tolist()
        hits = []
        for k, row in enumerate(rows.tolist()):
            file_code, start, end = codes[k], starts[k], ends[k]
            hits.append(
                Hit(
                    chunk_id=ids[k],
                    file_path=attributes.paths[file_code],
                    language=attributes.languages[file_code] or "unknown",
                    chunk_type=attributes.type_names[type_codes[k]] or "unknown",
                    symbol=self.symbols[row],
                    code=self.code[row],
                    start_line=start or 1,
                    end_line=end or start or 1,
                    score=scores[k],
                    file=self.file_states[file_code],
                )
            )
        self.code.forget_pages()  # about 900 hits a hybrid search, each read with 64 KB around it
        return hits

    def _hit(self, i: int, score: float) -> Hit:
        return self._hits(np.array([i], dtype=np.int64), [score])[0]

    def texts(self) -> Iterator[tuple[str, str, str]]:
        """Every row's (chunk type, symbol, code), one at a time: what the lexical index reads. The mapped texts'
        pages are let go as it goes: a million chunks' code is most of a gigabyte."""
        names = self.attributes.type_names
        for i, t in enumerate(self.attributes.type_codes.tolist()):
            if i and not i % FORGET_EVERY:
                self.symbols.forget_pages()
                self.code.forget_pages()
            yield names[t], self.symbols[i], self.code[i]

    def joined(self, alive: np.ndarray, delta: ChunkRows, files: Sequence[FileRow]) -> ChunkRows:
        """These rows (``alive``: which of them are still in the index) and the delta's, numbered in ``files``,
        the index's file rows now (in path order)."""
        attributes = Attributes.joined(files, [(self.attributes, alive), (delta.attributes, np.ones(len(delta), bool))])
        chunk_ids = np.concatenate([self.chunk_ids, delta.chunk_ids])
        start_lines = np.concatenate([self.start_lines, delta.start_lines])
        live = np.flatnonzero(attributes.alive) if attributes.alive is not None else np.arange(chunk_ids.size)
        return ChunkRows(
            chunk_ids=chunk_ids,
            attributes=attributes,
            start_lines=start_lines,
            end_lines=np.concatenate([self.end_lines, delta.end_lines]),
            symbols=self.symbols + delta.symbols,
            code=self.code + delta.code,
            order=_tie_break(chunk_ids, start_lines, attributes.file_codes),
            name_keys=np.concatenate([self.name_keys, delta.name_keys]),
            file_states=tuple(f.state for f in files),
            by_id=live[np.argsort(chunk_ids[live], kind="stable")],
        )

    def save(self, into: Path) -> None:
        for name in _ARRAYS:
            np.save(into / f"{name}.npy", getattr(self, name))
        self.symbols.save(into, "symbols")
        self.code.save(into, "code")
        self.attributes.save(into)
        (into / "file_states.json").write_text(json.dumps([s.saved() for s in self.file_states]), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> ChunkRows:
        states = json.loads((folder / "file_states.json").read_text(encoding="utf-8"))
        return cls(
            attributes=Attributes.load(folder),
            file_states=tuple(FileState(*s) for s in states),
            symbols=Texts.load(folder, "symbols"),
            code=Texts.load(folder, "code"),
            **{name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in _ARRAYS},
        )


def _re2(pattern: bytes) -> Any:
    """A compiled RE2 pattern. RE2 logs a pattern it cannot parse to the process's stderr from C++, before the
    error reaches us: the caller's terminal would show two lines of log before our one."""
    import re2

    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


def name_key(symbol: bytes) -> int:
    """A lowercased symbol's key: the CRC-32 of what is left once its trailing ``_partN`` suffixes go. A symbol
    named ``n`` (``n`` and any suffixes) has the key of ``n``: the rows to read for a name are those of its key."""
    return zlib.crc32(_TRAILING_PARTS.sub(b"", symbol, count=1))


def _tie_break(chunk_ids: np.ndarray, start_lines: np.ndarray, file_codes: np.ndarray) -> np.ndarray:
    # DuckDB sorts NULL start lines last; 0 stands for NULL here, so it sorts as the largest line.
    null_last = np.where(start_lines == 0, np.iinfo(np.int64).max, start_lines)
    return np.lexsort((chunk_ids, null_last, file_codes)).astype(np.int64)


def build(files: Sequence[FileRow], chunks: Sequence[tuple[Any, ...]]) -> ChunkRows:
    """From ``database.file_rows`` (in path order) and ``database.chunk_rows`` (id, file id, type, symbol, code,
    start line, end line; in id order)."""
    return built(files, [chunks])


def built(
    files: Sequence[FileRow],
    windows: Iterable[Sequence[tuple[Any, ...]]],
    into: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> ChunkRows:
    """``build`` from windows of rows in id order (``database.chunk_windows``), one held at a time; ``into``: a
    folder where the code and symbols are written as they come (``spill.Blob``), then mapped; ``progress`` hears
    the rows read so far."""
    position = {f.file_id: i for i, f in enumerate(files)}
    types: dict[str, int] = {}
    columns: dict[str, list[np.ndarray]] = {name: [] for name in ("ids", "files", "types", "starts", "ends", "keys")}
    texts = {name: _TextsWriter(None if into is None else into / f"{name}.npy") for name in ("symbols", "code")}
    done = 0
    try:
        for window in windows:
            n = len(window)
            columns["ids"].append(np.fromiter((row[0] for row in window), np.int64, n))
            columns["files"].append(np.fromiter((position[row[1]] for row in window), np.int32, n))
            columns["types"].append(
                np.fromiter((types.setdefault(row[2] or "", len(types)) for row in window), np.int32, n)
            )
            columns["starts"].append(np.fromiter((row[5] or 0 for row in window), np.int64, n))
            columns["ends"].append(np.fromiter((row[6] or 0 for row in window), np.int64, n))
            columns["keys"].append(
                np.fromiter((name_key((row[3] or "").encode().lower()) for row in window), np.uint32, n)
            )
            texts["symbols"].write(row[3] or "" for row in window)
            texts["code"].write(row[4] or "" for row in window)
            done += n
            if progress is not None:
                progress(done)
    except BaseException:
        for writer in texts.values():
            writer.close()  # a failed read leaves no open file behind
        raise
    ids, file_codes, type_codes, start_lines, end_lines, name_keys = (
        np.concatenate(parts) if parts else np.zeros(0, dtype)
        for parts, dtype in zip(columns.values(), _DTYPES, strict=True)
    )
    arrays = {
        "chunk_ids": ids,
        "start_lines": start_lines,
        "end_lines": end_lines,
        "order": _tie_break(ids, start_lines, file_codes),
        "name_keys": name_keys,
    }
    for array in arrays.values():
        array.flags.writeable = False
    return ChunkRows(
        attributes=Attributes.of(files, file_codes, type_codes, tuple(types)),
        file_states=tuple(f.state for f in files),
        symbols=texts["symbols"].texts(),
        code=texts["code"].texts(),
        **arrays,
    )


_DTYPES = (np.int64, np.int32, np.int32, np.int64, np.int64, np.uint32)


class _TextsWriter:
    """``Texts`` made window by window: held as bytes, or written to a ``.npy`` file as they come."""

    def __init__(self, path: Path | None) -> None:
        self._blob = None if path is None else spill.Blob(path)
        self._held: list[bytes] = []
        self._ends: list[np.ndarray] = []
        self._size = 0

    def write(self, texts: Iterable[str]) -> None:
        encoded = [text.encode("utf-8") for text in texts]
        self._ends.append(self._size + np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded))))
        joined = b"".join(encoded)
        self._size += len(joined)
        if self._blob is None:
            self._held.append(joined)
        else:
            self._blob.write(joined)

    def close(self) -> None:
        if self._blob is not None:
            self._blob.close()

    def texts(self) -> Texts:
        ends = np.concatenate(self._ends) if self._ends else np.zeros(0, np.int64)
        if self._blob is not None:
            return Texts(((self._blob.mapped(), ends),))
        return Texts(((np.frombuffer(b"".join(self._held), dtype=np.uint8).copy(), ends),))


def language_counts(files: Sequence[FileRow]) -> tuple[tuple[str, int, int], ...]:
    """(language, files, chunks), most chunks first: what ``database.language_counts`` answers."""
    counts: dict[str, list[int]] = {}
    for f in files:
        entry = counts.setdefault(f.language or "unknown", [0, 0])
        entry[0] += 1
        entry[1] += f.chunks
    return tuple(sorted(((lang, n, c) for lang, (n, c) in counts.items()), key=lambda t: (-t[2], t[0])))
