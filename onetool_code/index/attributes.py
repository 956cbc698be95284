"""The search filters evaluated in memory, over per-chunk attributes, exactly as ``schema.filter_sql`` words them.

A snapshot's vectors and lexical index answer without SQL, so it must keep the same rows the SQL
would: language and chunk type by equality, include and exclude as substrings of DuckDB's own ``lower(path)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from onetool_code.hits import FileRow
from onetool_code.index.store import heap
from onetool_code.schema import Filters


@dataclass(frozen=True, eq=False)
class Attributes:
    """Per chunk (entry ``i`` of every array): its file and type; per file: its path and language.

    Files are numbered in DuckDB's ``ORDER BY path``, so a file's number is also its rank in the path tie-break.
    """

    file_codes: np.ndarray  # int32, index into the per-file tuples
    type_codes: np.ndarray  # int32, index into type_names
    paths: tuple[str, ...]
    lower_paths: tuple[str, ...]  # DuckDB's lower(path), as the SQL filters compare it
    languages: tuple[str | None, ...]
    type_names: tuple[str, ...]
    alive: np.ndarray | None = None  # bool per chunk, in a snapshot refreshed by a delta (None: every row is)

    @classmethod
    def of(
        cls, files: Sequence[FileRow], file_codes: np.ndarray, type_codes: np.ndarray, type_names: tuple[str, ...]
    ) -> Attributes:
        """Per-chunk codes into ``files`` (in DuckDB's path order) and into ``type_names``."""
        return cls(
            file_codes=file_codes,
            type_codes=type_codes,
            paths=tuple(f.path for f in files),
            lower_paths=tuple(f.lower_path for f in files),
            languages=tuple(f.language for f in files),
            type_names=type_names,
        )

    @classmethod
    def joined(cls, files: Sequence[FileRow], parts: Sequence[tuple[Attributes, np.ndarray]]) -> Attributes:
        """Several parts' rows as one, each part with its own numbering of files and types and a mask of its
        live rows, renumbered into ``files`` (in DuckDB's path order); a row whose file is not there is dead."""
        position = {f.path: i for i, f in enumerate(files)}
        types: dict[str, int] = {}
        file_codes, type_codes, alive = [], [], []
        for part, live in parts:
            file_map = np.fromiter((position.get(p, -1) for p in part.paths), np.int32, len(part.paths))
            type_map = np.fromiter((types.setdefault(t, len(types)) for t in part.type_names), np.int32)
            codes = file_map[part.file_codes] if file_map.size else np.zeros(0, np.int32)
            alive.append(live & (codes >= 0))
            file_codes.append(np.where(codes >= 0, codes, 0).astype(np.int32))
            type_codes.append(type_map[part.type_codes] if type_map.size else np.zeros(0, np.int32))
        every = np.concatenate(alive) if alive else np.zeros(0, bool)
        return cls(
            file_codes=np.concatenate(file_codes) if file_codes else np.zeros(0, np.int32),
            type_codes=np.concatenate(type_codes) if type_codes else np.zeros(0, np.int32),
            paths=tuple(f.path for f in files),
            lower_paths=tuple(f.lower_path for f in files),
            languages=tuple(f.language for f in files),
            type_names=tuple(types),
            alive=None if every.all() else every,
        )

    def rows(self, filters: Filters) -> np.ndarray | None:
        """The live rows the filters keep (None: all)."""
        if not (filters.languages or filters.chunk_types or filters.include or filters.exclude):
            return None if self.alive is None else np.flatnonzero(self.alive)
        keep_file = np.fromiter(map(filters.keeps_file, self.languages, self.lower_paths), bool, len(self.paths))
        keep = keep_file[self.file_codes]
        if filters.chunk_types:
            keep &= _each(self.type_names, lambda t: t in filters.chunk_types)[self.type_codes]
        if self.alive is not None:
            keep &= self.alive
        return np.flatnonzero(keep)

    def save(self, folder: Path) -> None:
        np.save(folder / "file_codes.npy", self.file_codes)
        np.save(folder / "type_codes.npy", self.type_codes)
        meta = {"paths": self.paths, "lower_paths": self.lower_paths, "languages": self.languages}
        (folder / "attributes.json").write_text(json.dumps({**meta, "types": self.type_names}), encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> Attributes:
        meta = json.loads((folder / "attributes.json").read_text(encoding="utf-8"))
        return cls(
            file_codes=np.load(folder / "file_codes.npy", mmap_mode="r"),
            type_codes=np.load(folder / "type_codes.npy", mmap_mode="r"),
            paths=tuple(meta["paths"]),
            lower_paths=tuple(meta["lower_paths"]),
            languages=tuple(meta["languages"]),
            type_names=tuple(meta["types"]),
        )

    @property
    def nbytes(self) -> int:
        strings = (*self.paths, *self.lower_paths, *self.type_names, *(x for x in self.languages if x))
        arrays = (self.file_codes, self.type_codes, *(() if self.alive is None else (self.alive,)))
        return heap(*arrays) + sum(len(s) + 49 for s in strings)


def _each(values: Sequence[Any], test: Callable[[Any], bool]) -> np.ndarray:
    return np.fromiter((test(v) for v in values), bool, len(values))
