"""Arrays written to disk as they are read, so that a first read of a large index never holds its vectors in
memory (1,062,217 x 1536 float32 is 6.5 GB): each window goes to a ``.npy`` file by plain writes (the page cache
holds them, not the process), the whole is mapped once read, and publishing the snapshot moves the file into it.

The files live in a private folder beside the snapshot being made (``store.spill_folder``): removed once the
snapshot is published (a mapping outlives the removal), or with the folders of dead writers if the process dies.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from onetool_code.index.store import SPILL
from onetool_code.published import manifest
from onetool_code.published.rows import RemoteRows

T = TypeVar("T")


class Writer:
    """One array of known shape, written row block by row block."""

    def __init__(self, path: Path, shape: tuple[int, ...], dtype: type) -> None:
        self.path = path
        self._file = path.open("wb")
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
        np.lib.format.write_array_header_1_0(self._file, header)

    def write(self, block: np.ndarray) -> None:
        self._file.write(np.ascontiguousarray(block).data)

    def mapped(self) -> np.ndarray:
        """The whole array, read-only and mapped (the file is complete)."""
        self._file.close()
        return np.load(self.path, mmap_mode="r")


class Blob:
    """A ``.npy`` of bytes whose length is known only at the end (a million chunks' code): its header is written
    with room for any length, and rewritten, as long, once the bytes are in."""

    HEADER = 128  # bytes, the magic string and length included (numpy pads its own to a multiple of 64)

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0
        self._file = path.open("wb")
        self._file.write(self._header(0))

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def mapped(self) -> np.ndarray:
        """The bytes, read-only and mapped."""
        self._file.seek(0)
        self._file.write(self._header(self.size))
        self._file.close()
        return np.load(self.path, mmap_mode="r")

    def close(self) -> None:
        self._file.close()

    def _header(self, size: int) -> bytes:
        text = repr({"descr": "|u1", "fortran_order": False, "shape": (size,)})
        text = text.ljust(self.HEADER - 10 - 1) + "\n"
        return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin1")


def forget_pages(array: np.ndarray) -> None:
    """Let go of the pages of a mapped array this process has read (they stay in the page cache, and come back
    at the next read): a pass over a million chunks' code would otherwise count it all as the process's."""
    mapping = getattr(array, "_mmap", None)
    if isinstance(array, np.memmap) and isinstance(mapping, mmap.mmap):
        mapping.madvise(mmap.MADV_DONTNEED)


# What one window of a scan maps: 1.42 M x 1536 int8 in 9 of them. Each window waits for the GIL a few times,
# which a hybrid search's lexical leg holds meanwhile: 64 MB windows made it 100 ms slower at 1.42 M chunks.
WINDOW_BYTES = 256 << 20


def by_window(array: np.ndarray, score: Callable[[np.ndarray], T]) -> list[T]:
    """``score`` of each window of rows, in order. A mapped array is mapped a window at a time (``MAP_POPULATE``:
    its pages in one call) and let go after it: a scan of all of a million chunks' int8 codes through one mapping
    would count its 2.2 GB as the process's own (the page cache keeps them either way)."""
    start, stop = 0, array.shape[0]
    name = getattr(array, "filename", None)
    if not (isinstance(array, np.memmap) and name and array.flags.c_contiguous and array.ndim == 2):
        return [score(array)] if stop else []
    width = array.strides[0]
    step = max(1, WINDOW_BYTES // max(width, 1))
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    out: list[T] = []
    try:
        descriptor = os.open(name, os.O_RDONLY)
    except FileNotFoundError:  # the snapshot was superseded and removed meanwhile: its mapping still reads
        return [score(array[first : min(first + step, stop)]) for first in range(start, stop, step)]
    try:
        for first in range(start, stop, step):
            rows = min(step, stop - first)
            begin = array.offset + first * width
            aligned = begin - begin % mmap.ALLOCATIONGRANULARITY
            with mmap.mmap(descriptor, begin - aligned + rows * width, flags, mmap.PROT_READ, offset=aligned) as window:
                view = np.frombuffer(window, array.dtype, rows * array.shape[1], begin - aligned)
                out.append(score(view.reshape(rows, array.shape[1])))
                del view  # the mapping closes only once no array looks into it
    finally:
        os.close(descriptor)
    return out


def read_ahead(array: np.ndarray) -> None:
    """Ask the kernel to read a mapped array's file into the page cache, without waiting for it."""
    name = getattr(array, "filename", None)
    if not (isinstance(array, np.memmap) and name and hasattr(os, "posix_fadvise")):
        return
    try:
        descriptor = os.open(name, os.O_RDONLY)
    except FileNotFoundError:  # superseded and removed: its mapping reads on, and nothing can be asked for
        return
    try:
        os.posix_fadvise(descriptor, array.offset, array.nbytes, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(descriptor)


def rows_of(array: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``array[rows]``; of an array mapped from a file, read from the file (``os.preadv``, row by row), not
    through the mapping: the kernel maps 64 KB around each page a mapping touches (16 rows of 1536 float32 for
    each row read), which a process would count as its own until ``forget_pages``."""
    if isinstance(array, RemoteRows):
        whole = array.whole()
        if whole is None:
            return array.take(rows)
        array = whole
    mapping = getattr(array, "base", None)
    name = getattr(array, "filename", None)
    if not (isinstance(array, np.memmap) and isinstance(mapping, mmap.mmap) and name and array.flags.c_contiguous):
        return np.asarray(array[rows])
    try:
        descriptor = os.open(name, os.O_RDONLY)
    except FileNotFoundError:  # the snapshot was superseded and removed meanwhile: its mapping still reads
        return np.asarray(array[rows])
    width = array.strides[0]
    out = np.empty((rows.size, *array.shape[1:]), dtype=array.dtype)
    view = memoryview(out.reshape(-1).view(np.uint8))
    try:
        for k, row in enumerate(rows.tolist()):
            os.preadv(descriptor, [view[k * width : (k + 1) * width]], array.offset + row * width)
    finally:
        os.close(descriptor)
    return out


def matrix(folder: Path, db_path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """A snapshot's float32 rows, mapped; or, while a published version's are still in its store (their block
    digests beside where they go), read from it by range (``published.rows``)."""
    path = folder / "matrix.npy"
    if path.exists() or not path.with_name(path.name + manifest.BLOCKS).exists():
        return np.load(path, mmap_mode="r")
    from onetool_code.published import replica

    return replica.remote_rows(db_path, folder, (int(shape[0]), int(shape[1])))  # type: ignore[return-value]


def save(array: np.ndarray, path: Path) -> None:
    """``np.save``, or for an array spilled whole, a move of its file (same file system: the cache directory)."""
    name = getattr(array, "filename", None)
    source = Path(name) if isinstance(array, np.memmap) and name else None
    if (
        source is not None
        and SPILL in source.parent.parent.name
        and array.shape == np.load(source, mmap_mode="r").shape
    ):
        source.replace(path)
    else:
        np.save(path, array)
