"""A shipped snapshot's float32 rows, read from the store by range until they are here whole.

The float32 matrix is most of a snapshot's bytes (670 MB of 1.1 GB at 109,494 x 1536), and a search reads only
the few hundred rows it rescores (``quantised.rescore_until_sure``); the scan reads the int8 codes, fetched
with the rest. So a first fetch leaves the matrix in the store, and a search reads the blocks holding its rows
with ranged GETs. Each block is checked against its sha256 before a row of it is used: the publisher writes
them, one per ``BLOCK`` bytes of the ``.npy`` file, header included, into ``matrix.npy.blocks``, an object the
manifest lists with its own size and sha256. A block that does not match is refused, never answered from.

Meanwhile the matrix is fetched whole in a thread (``fill_in_background``), each block checked against its
digest as it is written, and renamed into place; from then on it is mapped, as a local snapshot's is, and no range is read.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import threading
from pathlib import Path
from typing import BinaryIO

import numpy as np

from onetool_code.errors import OneToolCodeError
from onetool_code.published import download, manifest
from onetool_code.published.environment import Environment
from onetool_code.published.store import Location, RowsUnreachable, Store, StoreError
from onetool_code.spans import note

BLOCK = 16 << 10  # bytes per digest: a row of 1536 float32 spans one or two; 43,000 digests (1.4 MB) at 670 MB
DIGEST = 32
HELD_BLOCKS = 4096  # verified blocks a process keeps (64 MiB), until the matrix is here whole
SYNCED = 32 << 20  # bytes of a background fetch written between two records of its progress


def write_digests(path: Path) -> Path:
    """The publisher's side: the sha256 of each block of ``path``, into ``path`` + ``BLOCKS``."""
    into = path.with_name(path.name + manifest.BLOCKS)
    with path.open("rb") as f, into.open("wb") as out:
        while block := f.read(BLOCK):
            out.write(hashlib.sha256(block).digest())
    return into


class RemoteRows:
    """The rows of one float32 ``.npy`` object in the store, read as an array is: ``shape``, ``[rows]``."""

    ndim = 2
    dtype = np.dtype(np.float32)

    def __init__(
        self, store: Store, item: manifest.Item, digests: bytes, shape: tuple[int, int], local: Path, linked: Path
    ) -> None:
        """``local``: where the whole object lands when fetched; ``linked``: where a snapshot expects it."""
        if len(digests) != DIGEST * -(-item.size // BLOCK):
            raise StoreError(f"the block digests of {store.location.url}/{item.key} do not cover it: refused")
        self.shape = shape
        self._store, self._item, self._digests = store, item, digests
        self._local, self._linked = local, linked
        self._blocks: dict[int, bytes] = {}
        self._offset: int | None = None  # the .npy header's length
        self._mapped: np.ndarray | None = None
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:  # other searches add blocks meanwhile
            return sum(len(b) for b in self._blocks.values())

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: int | np.integer | np.ndarray) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return self.take(np.array([index]))[0]
        index = np.asarray(index)
        return self.take(np.flatnonzero(index) if index.dtype == bool else index)

    def whole(self) -> np.ndarray | None:
        """The matrix mapped, once fetched whole and verified (linked where its snapshot expects it); else None."""
        if self._mapped is None and self._local.exists():
            mapped = np.load(self._local, mmap_mode="r")
            if mapped.shape != self.shape or mapped.dtype != self.dtype:
                return None
            with contextlib.suppress(OSError):
                os.link(self._local, self._linked)  # a search of a process started later maps it at once
            with self._lock:
                self._mapped = mapped
                self._blocks.clear()
        return self._mapped

    def take(self, rows: np.ndarray) -> np.ndarray:
        """These rows, from the mapped matrix when it is here, else from verified blocks of the store's."""
        mapped = self.whole()
        if mapped is not None:
            return np.asarray(mapped[rows])
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if not rows.size:  # asked of every overlay: no store for no row
            return np.empty((0, self.shape[1]), dtype=self.dtype)
        if rows.min() < 0 or rows.max() >= self.shape[0]:
            raise IndexError(f"rows out of range 0..{self.shape[0] - 1}")
        width = self.shape[1] * self.dtype.itemsize
        starts = self._header() + rows * width
        firsts, lasts = starts // BLOCK, (starts + width - 1) // BLOCK
        spans = [range(int(a), int(b) + 1) for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True)]
        blocks = self._verified(sorted({b for span in spans for b in span}))
        out = np.empty((rows.size, width), dtype=np.uint8)
        for k, (start, span) in enumerate(zip(starts.tolist(), spans, strict=True)):
            joined = b"".join(blocks[b] for b in span)
            skip = start - span.start * BLOCK
            out[k] = np.frombuffer(joined, dtype=np.uint8, count=width, offset=skip)
        return out.view(self.dtype).reshape(rows.size, self.shape[1])

    def _header(self) -> int:
        """The header's length, from block 0 (verified): the object must hold exactly the rows expected."""
        if self._offset is None:
            head = io.BytesIO(self._verified([0])[0])
            try:
                version = np.lib.format.read_magic(head)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, fortran, dtype = read(head)
            except ValueError as exc:
                raise StoreError(f"{self._where()} is not an array ({exc}): refused") from None
            offset = head.tell()
            if shape != self.shape or fortran or dtype != self.dtype or offset + self._bytes() != self._item.size:
                raise StoreError(f"{self._where()} does not hold the {self.shape} float32 rows expected: refused")
            self._offset = offset
        return self._offset

    def _bytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    def _verified(self, wanted: list[int]) -> dict[int, bytes]:
        """These blocks, fetched if need be (adjacent ones in one range), each checked against its digest."""
        with self._lock:
            found = {b: self._blocks[b] for b in wanted if b in self._blocks}
        missing = [b for b in wanted if b not in found]
        if not missing:
            return found
        runs: list[list[int]] = []
        for b in missing:
            if runs and runs[-1][1] == b:
                runs[-1][1] = b + 1
            else:
                runs.append([b, b + 1])
        size = self._item.size
        try:
            parts = self._store.ranges(
                self._item.key, [a * BLOCK for a, _ in runs], [min(b * BLOCK, size) for _, b in runs], gap=BLOCK
            )
        except StoreError as exc:
            raise RowsUnreachable(
                f"{exc}; the vectors of this published version are not all on this machine yet (they are read "
                "from the store until then): search again once it can be reached"
            ) from None
        for (first, last), data in zip(runs, parts, strict=True):
            for b in range(first, last):
                block = data[(b - first) * BLOCK : (b - first + 1) * BLOCK]
                if hashlib.sha256(block).digest() != self._digests[b * DIGEST : (b + 1) * DIGEST]:
                    raise StoreError(
                        f"{self._where()} does not match its block digests (block {b}): refused, nothing was "
                        "answered from it"
                    )
                found[b] = block
        with self._lock:
            if len(self._blocks) + len(missing) > HELD_BLOCKS:
                self._blocks.clear()
            self._blocks.update((b, found[b]) for b in missing)
        return found

    def _where(self) -> str:
        return f"{self._store.location.url}/{self._item.key}"


def fill_in_background(
    root: Path, found: manifest.Manifest, todo: list[tuple[manifest.Item, Path]], location: Location, env: Environment
) -> None:
    """Fetch the rows a version left in the store, whole and verified, in a thread (one per version and process;
    a process finding another one at it leaves it to that one). Searches then map them: no more ranges. Rows that
    would not leave ``SPARE_BYTES`` free stay in the store, read by range."""
    todo = [(item, path) for item, path in todo if not path.exists()]
    needed = sum(item.size - download.size_of(path.with_name(path.name + manifest.FETCHING)) for item, path in todo)
    if todo and needed + download.SPARE_BYTES > shutil.disk_usage(root).free:
        note(f"the rows of version {found.version} stay in the store: {needed / 1e6:,.0f} MB do not fit the disk")
        return
    with _FILLING_LOCK:
        if not todo or str(root) in _filling:
            return
        _filling.add(str(root))

    def fill() -> None:
        try:
            fd = os.open(root.parent / "rows.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            fd = None
        try:
            if fd is None:
                return
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            store = Store(location, env)
            for item, path in todo:
                part = path.with_name(path.name + manifest.FETCHING)
                _fetch(store, item, path.with_name(path.name + manifest.BLOCKS).read_bytes(), part)
                os.utime(part, (found.created, found.created))
                part.rename(path)
        except (OSError, OneToolCodeError):
            pass  # the store gone, another process at it, the version removed: ranges serve meanwhile
        finally:
            if fd is not None:
                os.close(fd)
            with _FILLING_LOCK:
                _filling.discard(str(root))

    threading.Thread(target=fill, name="onetool-code rows", daemon=True).start()


_filling: set[str] = set()
_FILLING_LOCK = threading.Lock()


def _fetch(store: Store, item: manifest.Item, digests: bytes, part: Path) -> None:
    """One rows object into ``part``, each block checked against its digest before it is written (the digests were
    checked against the manifest's sha256 when they were fetched: every byte is checked, once). What is on disk
    (``fsync``) is recorded every ``SYNCED`` bytes, and a fetch a process's exit cut short resumes from there,
    reading nothing twice: a search process that lives a second or two still moves the fetch on."""
    record = part.with_name(part.name + ".done")
    try:
        kept = min(int(record.read_text(encoding="utf-8")), download.size_of(part)) // BLOCK * BLOCK
    except (OSError, ValueError):
        kept = 0
    index, pending = kept // BLOCK, bytearray()
    with os.fdopen(os.open(part, os.O_RDWR | os.O_CREAT, 0o600), "r+b") as out:
        out.truncate(kept)
        out.seek(kept)
        synced = kept
        for chunk in store.stream(item.key, kept, item.size) if kept < item.size else ():
            pending += chunk
            used = 0
            while (rest := len(pending) - used) >= BLOCK or (rest > 0 and index * BLOCK + rest >= item.size):
                block = bytes(pending[used : used + BLOCK])
                if hashlib.sha256(block).digest() != digests[index * DIGEST : (index + 1) * DIGEST]:
                    raise StoreError(f"{store.location.url}/{item.key} does not match its block digests: refused")
                out.write(block)
                used, index = used + len(block), index + 1
            del pending[:used]
            if out.tell() - synced >= SYNCED:
                synced = _synced(out, record)
        _synced(out, record)
        if pending or out.tell() != item.size:
            raise StoreError(f"{store.location.url}/{item.key} is not the size its manifest gives: refused")
    record.unlink()


def _synced(out: BinaryIO, record: Path) -> int:
    out.flush()
    os.fsync(out.fileno())
    record.write_text(str(out.tell()), encoding="utf-8")
    return out.tell()
