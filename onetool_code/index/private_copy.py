"""A private, consistent copy of an index file that another process holds read-write, in the cache directory.

The trap: DuckDB lets no reader open a file that a writer holds (and a reader that gets in first shuts the
writer out), but a plain byte copy is not a DuckDB connection: the writer never notices it. A copy is consistent
when neither the file nor its WAL changed while it was taken (the same size, times and inode before and after),
as if the writer had stopped at that instant; DuckDB then opens it as it opens a file after a crash. The copy is
deleted once read. Nothing is ever written into the project.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from onetool_code.errors import CopyError
from onetool_code.index.store import Signature, cache_root, dead
from onetool_code.schema import WAL_SUFFIX

FOLDER = "copies"
ATTEMPTS = 3  # copies tried before giving up on a file that changes while it is copied
SPARE_BYTES = 64 << 20  # left free on the cache's file system after a copy
_FICLONE = 0x40049409  # Linux's ioctl for a copy-on-write clone (btrfs, XFS); ext4 has none


@dataclass(frozen=True)
class Copy:
    path: Path  # the copied index file (its WAL beside it, when there was one)
    signature: Signature  # the state of the original file that the copy holds
    seconds: float
    cloned: bool  # a copy-on-write clone, not a byte copy


@contextlib.contextmanager
def taken(db_path: Path) -> Iterator[Copy]:
    """A consistent copy of the index file (and its WAL), deleted when the block ends."""
    root = cache_root() / FOLDER
    _remove_orphans(root)
    folder = root / f"{os.getpid()}-{threading.get_ident()}"
    try:
        yield _take(db_path, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _take(db_path: Path, folder: Path) -> Copy:
    wal = db_path.with_name(db_path.name + WAL_SUFFIX)
    for _ in range(ATTEMPTS):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(mode=0o700, parents=True)
        before = Signature.of(db_path)
        needed = before.size + (before.wal[0] if before.wal else 0)
        free = shutil.disk_usage(folder).free
        if free < needed + SPARE_BYTES:
            raise CopyError(
                f"not enough free space in {folder.parent} to copy the index while ChunkHound holds it "
                f"({needed / 1e6:,.0f} MB needed, {free / 1e6:,.0f} MB free); set ONETOOL_CODE_CACHE_DIR to a "
                "folder on a larger disk"
            )
        started = time.perf_counter()
        target = folder / db_path.name
        try:
            cloned = _copy(db_path, target)
            if before.wal:
                _copy(wal, target.with_name(target.name + WAL_SUFFIX))
        except FileNotFoundError:
            continue  # the WAL was checkpointed away between the look and the copy: try again
        except OSError as exc:
            raise CopyError(f"cannot copy the index {db_path} into {folder}: {exc}") from exc
        if Signature.of(db_path) == before:
            return Copy(target, before, time.perf_counter() - started, cloned)
    raise CopyError(f"the index {db_path} changed while it was copied, {ATTEMPTS} times")


def _copy(source: Path, target: Path) -> bool:
    """A copy-on-write clone where the file system offers one, else a byte copy (in the kernel: sendfile)."""
    with (
        source.open("rb") as src,
        os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as dst,
    ):
        try:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
            return True
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS):
                raise
    shutil.copyfile(source, target)
    return False


def _remove_orphans(root: Path) -> None:
    """Copies left by processes that died while copying (their PID is the folder name's first part)."""
    for folder in root.glob("*-*") if root.is_dir() else ():
        if dead(folder.name.split("-")[0]):
            shutil.rmtree(folder, ignore_errors=True)
