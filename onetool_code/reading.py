"""Reading a file that a repository put there: a regular file only, opened so that opening cannot block, and
never more than a bound.

The trap: a repository can hold a FIFO, a device or a symlink to one where a file is expected (git stores
symlinks; a checkout script can make a FIFO), and ``open`` of a FIFO waits for a writer forever. So a file is
opened non-blocking and checked for what it is before a byte is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# A settings, secrets or ignore file, or one of ChunkHound's sidecars: each is a few hundred bytes.
SMALL_FILE = 1 << 20


def read_regular(path: Path, limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of ``path``, when it is a regular file of at most ``limit`` bytes. ``follow_symlinks=False``: a
    symlink there is an error (ELOOP), for a file about to be replaced, whose link could lead anywhere.

    Raises OSError, its ``strerror`` saying why in a few words: the system's reason, "not a regular file" or
    "larger than N bytes" (errno EFBIG).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if found.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew since its size was read
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
    return data


def is_regular(path: Path) -> bool:
    """``path`` is a regular file (symlinks followed), asked without opening it."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


# The file that marks a project folder as a published index's (``published/replica.py``): its source files are
# not on this machine, and hits say so.
PUBLISHED_MARKER = ".onetool-code-published.json"
