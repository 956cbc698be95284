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

from onetool_code.derived import heap
from onetool_code.hits import FileRow
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

    def rows(self, filters: Filters) -> np.ndarray | None:
        """The rows the filters keep (None: all)."""
        if not (filters.languages or filters.chunk_types or filters.include or filters.exclude):
            return None
        keep_file = np.ones(len(self.paths), dtype=bool)
        if filters.languages:
            keep_file &= _each(self.languages, lambda lang: lang in filters.languages)
        if filters.include:
            keep_file &= _each(self.lower_paths, lambda p: any(n in p for n in filters.include))
        if filters.exclude:
            keep_file &= _each(self.lower_paths, lambda p: not any(n in p for n in filters.exclude))
        keep = keep_file[self.file_codes]
        if filters.chunk_types:
            keep &= _each(self.type_names, lambda t: t in filters.chunk_types)[self.type_codes]
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
        return heap(self.file_codes, self.type_codes) + sum(len(s) + 49 for s in strings)


def _each(values: Sequence[Any], test: Callable[[Any], bool]) -> np.ndarray:
    return np.fromiter((test(v) for v in values), bool, len(values))
