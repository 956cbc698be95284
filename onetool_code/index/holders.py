"""Who has the index file now, asked without opening it: a process holding it read-write, or ChunkHound's
compaction moving it aside."""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from onetool_code import schema

# Index files this process has open, by path: ``writer`` must not probe them (see there).
OPEN: Counter[str] = Counter()
OPEN_LOCK = threading.Lock()
# Linux's struct flock: l_type, l_whence, l_start, l_len, l_pid (and padding).
_FLOCK = "hhqqi4x"


def writer(db_path: Path) -> int | None:
    """The PID of a process holding the index read-write, asked of the kernel without opening it with DuckDB.

    DuckDB takes a POSIX lock on the whole file (a write lock for read-write, a read lock for read-only); asking
    whether a read lock would conflict finds a writer and ignores readers. Closing any descriptor of a file drops
    this process's own POSIX locks on it, so a caller never asks while this process has the index open (snapshot
    builds and this probe run under the same machine lock). None where the probe is not Linux's.
    """
    if not sys.platform.startswith("linux"):
        return None
    with OPEN_LOCK:
        if OPEN[str(db_path)]:
            return None  # open here: no writer can hold it, and closing the probe would drop this process's lock
    try:
        fd = os.open(db_path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None  # unreadable: opening it with DuckDB says so in its own words
    try:
        asked = struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
        kind, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, asked))
    finally:
        os.close(fd)
    return None if kind == fcntl.F_UNLCK else int(pid)


def process_name(pid: int) -> str:
    """A process's program name (``/proc/PID/comm``), when the system says it."""
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip()
    except OSError:
        return ""


# A compaction's file that has not changed for this long belongs to none running: one that crashed (ChunkHound
# restores its backup when it next opens the index), or one a repository shipped to make every search wait.
COMPACTION_STALE_SECONDS = 60.0


def compacting(db_path: Path) -> bool:
    """ChunkHound is compacting the index: the file is missing for now, not gone. The file moved aside is renamed
    as the compaction starts (its ctime), the rebuild and the intent are written throughout (their mtime)."""
    if db_path.exists():
        return False
    now = time.time()
    for suffix in schema.COMPACTION_SUFFIXES:
        try:
            found = db_path.with_name(db_path.name + suffix).stat()
        except (OSError, ValueError):
            continue
        if now - max(found.st_mtime, found.st_ctime) < COMPACTION_STALE_SECONDS:
            return True
    return False


def gone(db_path: Path) -> bool:
    """Nothing of the index file is there: no file, and no compaction moving it. Looked at in that order, then the
    file once more: each of ChunkHound's renames is atomic, so a swap that starts or ends between two looks still
    leaves one of them seeing the file or a compaction's name."""
    return not db_path.exists() and not compacting(db_path) and not db_path.exists()
