"""``usages``: the lines of the index that use a name, grouped by file, its definitions left out. No embeddings.

The chunks' code is scanned whole, as ``rg -w`` scans files: one regular expression over the snapshot's code blob
(memory-mapped, never decoded whole), each match placed in its chunk and line. ChunkHound stores a class and its
methods as overlapping chunks, so a line is counted once per file, not once per chunk holding it.

A qualified name narrows as ``search`` reads it (``ranking.names_in``): ``module.name`` (a lowercase qualifier)
counts the lines writing ``module.name`` and the bare ``name`` in files that mention ``module`` (its import), not
``other.name``; ``Class.method`` counts every use of ``method``, since which class an object has is beyond a text
index (``qs.bulk_create(...)``). A line that defines the name is a definition, never a use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from onetool_code import derived, index, live, rows
from onetool_code.engine import check_languages
from onetool_code.errors import BadInputError
from onetool_code.hits import KINDS, FileUses, Usages
from onetool_code.ranking import definition_lines, is_doc, is_test
from onetool_code.schema import Filters
from onetool_code.settings import Settings


@dataclass(frozen=True)
class _Name:
    """The name as the caller wrote it: the identifier to find, and the module that qualifies it, if any."""

    identifier: str
    module: str | None

    @classmethod
    def of(cls, written: str) -> _Name:
        *qualifiers, last = written.replace("::", ".").split(".")
        if not re.fullmatch(r"[A-Za-z_$][\w$]*", last) or not all(re.fullmatch(r"[\w$]+", q) for q in qualifiers):
            raise BadInputError(
                f"name {written!r} is not an identifier: give one, bare or qualified (bulk_create, "
                "QuerySet.bulk_create, timezone.now)"
            )
        near = qualifiers[-1] if qualifiers else None
        return cls(last, near if near and not near[0].isupper() else None)


def find(settings: Settings, written: str, filters: Filters) -> Usages:
    """Every use of ``written`` in the index, within ``filters``."""
    name = _Name.of(written)
    chunks, counts = _chunk_rows(settings)
    check_languages(counts, filters)
    places = _matches(chunks, name.identifier, filters)
    defining = re.compile(definition_lines([name.identifier.lower()]))
    qualified = None if name.module is None else re.compile(rf"(?<![\w$]){re.escape(name.module)}\s*\.\s*$")
    mentions = None if name.module is None else re.compile(rf"(?<![\w$]){re.escape(name.module)}(?![\w$])")
    by_file: dict[str, dict[int, str]] = {}
    definitions: dict[tuple[str, int], None] = {}
    mentioned: dict[str, bool] = {}
    for path, line, text, column in places:
        if defining.search(text):
            definitions.setdefault((path, line), None)
            continue
        if qualified is not None and mentions is not None:
            before = text[:column]
            if not qualified.search(before):
                if before.rstrip().endswith("."):
                    continue  # other.name: a name of another module or object
                if path not in mentioned:
                    mentioned[path] = _in_module(path, name.module) or _file_mentions(chunks, path, mentions)
                if not mentioned[path]:
                    continue
        by_file.setdefault(path, {})[line] = text
    files = [FileUses(path, _kind(path, chunks), tuple(sorted(lines.items()))) for path, lines in by_file.items()]
    files.sort(key=lambda f: (KINDS.index(f.kind), f.path))
    return Usages(written, tuple(files), tuple(sorted(definitions)))


def _chunk_rows(settings: Settings) -> tuple[rows.ChunkRows, tuple[tuple[str, int, int], ...]]:
    """The index's chunk rows: the snapshot's, or read from the file itself with snapshots off."""
    if settings.cache and derived.cache_problem() is None:
        held = live.view(settings.project_root, settings.db_path).snapshot
        return held.chunks, held.language_counts
    with index.connect(settings.project_root, settings.db_path) as con:
        files = index.file_rows(con)
        return rows.build(files, index.chunk_rows(con)), rows.language_counts(files)


def _matches(chunks: rows.ChunkRows, identifier: str, filters: Filters) -> list[tuple[str, int, str, int]]:
    """(path, line, the line's text, the column the name starts at) of every whole-identifier occurrence in the
    chunks within ``filters``; a line held by several chunks comes once per chunk. The chunks lie end to end in
    the blob, so a name's boundaries are checked against its own chunk's ends, not its neighbours' bytes."""
    needle = identifier.encode()
    kept = chunks.attributes.rows(filters)
    allowed = np.ones(chunks.chunk_ids.size, dtype=bool) if kept is None else np.zeros(chunks.chunk_ids.size, bool)
    if kept is not None:
        allowed[kept] = True
    if chunks.attributes.alive is not None:
        allowed &= chunks.attributes.alive
    found = []
    first = 0
    for blob, ends in chunks.code.parts:
        data = blob.view(np.ndarray)
        ends = ends.view(np.ndarray)
        if not ends.size:
            continue
        offsets = np.fromiter((m.start() for m in re.finditer(re.escape(needle), data)), np.int64)
        owners = np.searchsorted(ends, offsets, side="right")
        starts = np.where(owners > 0, ends[np.maximum(owners - 1, 0)], 0)
        stops = offsets + len(needle)
        inside = stops <= ends[np.minimum(owners, ends.size - 1)]
        before = np.where(offsets > starts, data[np.maximum(offsets - 1, 0)], ord(" "))
        after = np.where(
            stops < ends[np.minimum(owners, ends.size - 1)], data[np.minimum(stops, data.size - 1)], ord(" ")
        )
        whole = inside & ~_WORD[before] & ~_WORD[after] & allowed[first + owners]
        for offset, owner in zip(offsets[whole].tolist(), owners[whole].tolist(), strict=True):
            row = first + owner
            start, end = (int(ends[owner - 1]) if owner else 0), int(ends[owner])
            line_start = data[start:offset].tobytes().rfind(b"\n") + 1 + start
            line_end = data[offset:end].tobytes().find(b"\n")
            stop = end if line_end < 0 else offset + line_end
            number = int(chunks.start_lines[row]) + data[start:line_start].tobytes().count(b"\n")
            text = data[line_start:stop].tobytes().decode("utf-8", "replace")
            column = len(data[line_start:offset].tobytes().decode("utf-8", "replace"))
            path = chunks.attributes.paths[int(chunks.attributes.file_codes[row])]
            found.append((path, number, text, column))
        first += int(ends.size)
    return found


# The bytes of an identifier: letters, digits, _ and $ (JavaScript's), and every byte of a non-ASCII character.
_WORD = np.zeros(256, dtype=bool)
for _byte in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$":
    _WORD[_byte] = True
_WORD[0x80:] = True


def _in_module(path: str, module: str) -> bool:
    """Whether the file is the qualifier's module or in its folder (``utils/timezone.py`` for ``timezone``)."""
    parts = PurePosixPath(path.lower()).parts
    return module.lower() in {*parts[:-1], parts[-1].split(".")[0]} if parts else False


def _file_mentions(chunks: rows.ChunkRows, path: str, mention: re.Pattern[str]) -> bool:
    """Whether any chunk of the file writes the qualifier (``from django.utils import timezone``)."""
    code = chunks.attributes.paths.index(path)
    for row in np.flatnonzero(chunks.attributes.file_codes == code).tolist():
        if mention.search(chunks.code[row]):
            return True
    return False


def _kind(path: str, chunks: rows.ChunkRows) -> str:
    language = chunks.attributes.languages[chunks.attributes.paths.index(path)]
    if is_test(path):
        return "tests"
    return "docs" if is_doc(path, language) else "code"
