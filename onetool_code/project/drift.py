"""How far a checkout is from its index: the files the index would hold now (the walk ChunkHound's rules and
``.gitignore`` decide) against its ``files`` rows, changed, new and deleted.

Size and mtime decide first, as ChunkHound's own re-index does (within its mtime tolerance); only a file whose
stat differs is read, and its xxh3-64 ``content_hash`` decides (a ``git checkout`` that rewrites a file with the
same bytes is no change).

The trap is the cost: every search asks, so a long-lived process keeps what the last walk met (``Checkout``)
and asks again with stats alone: every walked directory (a file added, removed or renamed changes its
directory's mtime, and so does an editor that saves by renaming), every rule file and every walked file (an edit
in place changes only the file's own). Only when a directory or rule file changed is the checkout walked again.
So an edit is seen by the first check after it is saved, and no change costs one stat per directory and file
(Django: 3,232 and 4,032; ``bench/overlay.py``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import xxhash

from onetool_code.hits import FileRow, FileState
from onetool_code.project.placement import MTIME_EPSILON
from onetool_code.project.walk import SourceFile, read_file, walk

_UNKNOWN = FileState()  # a ``files`` row with no size, mtime or hash


@dataclass(frozen=True)
class Drift:
    """Paths relative to the project root, each tuple in path order; ``now``: the changed and new files' source
    records as the walk met them (what an overlay reads)."""

    changed: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    now: tuple[SourceFile, ...] = ()
    present: int = 0  # the index's files the walk met

    @property
    def files(self) -> int:
        return len(self.changed) + len(self.new) + len(self.deleted)

    @property
    def checkout(self) -> bool:
        """Whether the root is a checkout of the index at all: one holding none of its files is another place
        (an index named by ``db`` beside an empty folder), not a checkout with every file deleted."""
        return self.present > 0 or not self.deleted


@dataclass(frozen=True)
class _Walked:
    """One walk: its files, and the stats that say whether it still holds (directories and rule files by mtime)."""

    files: tuple[SourceFile, ...]
    directories: tuple[tuple[str, int], ...]  # (absolute path, st_mtime_ns)

    def still_holds(self) -> bool:
        return all(_stated(path)[1] == mtime for path, mtime in self.directories)


class Checkout:
    """The files under one root as last walked, asked again cheaply (thread-safe: the MCP server's calls run on
    threads of their own)."""

    def __init__(self, root: Path, exclude: frozenset[Path]) -> None:
        self.root = root
        self.exclude = exclude
        self._lock = threading.Lock()
        self._walked: _Walked | None = None
        # (path, size, mtime) -> xxh3-64 of the bytes, or None when the content is not indexed (binary, generated)
        self._hashes: dict[tuple[str, int, float], str | None] = {}

    def files(self) -> tuple[SourceFile, ...]:
        """The files the index would hold now, each with its current size and mtime."""
        with self._lock:
            walked = self._walked
            if walked is None or not walked.still_holds():
                walked = self._walked = _walk(self.root, self.exclude)
                return walked.files
        return tuple(_restat(walked.files))

    def digest(self, source: SourceFile) -> str | None:
        """The file's ChunkHound content hash, or None when its content is not indexed; kept per stat."""
        key = (source.rel, source.size, source.mtime)
        if key not in self._hashes:
            data = read_file(source)
            self._hashes[key] = None if isinstance(data, str) else xxhash.xxh3_64_hexdigest(data)
        return self._hashes[key]


def _walk(root: Path, exclude: frozenset[Path]) -> _Walked:
    rules = [_stated(path) for path in _rule_files(root)]  # before the walk: a change during it is seen next time
    result = walk(root, exclude=exclude)
    # A .gitignore made later changes its directory's mtime: only those there now are stated again.
    ignores = (_stated(f"{directory}/.gitignore") for directory, _ in result.directories)
    rules += [stated for stated in ignores if stated[1] != -1]
    return _Walked(tuple(result.files), (*result.directories, *rules))


def _rule_files(root: Path) -> Iterable[str]:
    """The ignore files that decide the walk beside the ``.gitignore`` files: an edit in place changes their own
    mtime, not their directory's."""
    yield str(root / ".git" / "info" / "exclude")
    yield str(root / ".chignore")


def _stated(path: str) -> tuple[str, int]:
    """A path and its mtime, -1 when it is not there (its creation is then a change)."""
    try:
        return path, os.stat(path).st_mtime_ns  # noqa: PTH116 (a str: a Path each costs more than the stat)
    except OSError:
        return path, -1


def _restat(files: Sequence[SourceFile]) -> Iterable[SourceFile]:
    """The walked files with their sizes and mtimes now (an edit in place); one gone since is left out."""
    for source in files:
        try:
            info = source.path.stat()
        except OSError:
            continue
        if info.st_size == source.size and info.st_mtime == source.mtime:
            yield source
        else:
            yield SourceFile(source.path, source.rel, source.language, info.st_size, info.st_mtime)


def drift(checkout: Checkout, indexed: Sequence[FileRow]) -> Drift:
    """The checkout against the ``files`` rows of its index."""
    rows = {row.path: row.state for row in indexed}
    changed: list[SourceFile] = []
    new: list[SourceFile] = []
    present: set[str] = set()
    root = checkout.root
    real_root = Path(os.path.realpath(root))
    for source in checkout.files():
        state = rows.get(source.rel)
        if state is None:
            # ChunkHound 6.1.0 indexes no file reached through a symlink (serde's ``serde/src/core`` link to
            # ``serde_core/src`` is not in its index, its target is): such a file is not new, it is elsewhere.
            linked = Path(os.path.realpath(source.path)) != real_root / source.rel
            if not linked and checkout.digest(source) is not None:  # binary, generated, minified: skipped too
                new.append(source)
            continue
        present.add(source.rel)
        if state == _UNKNOWN or not _differs(state, source):
            continue  # a row with no size, mtime or hash (not ChunkHound's) cannot be told apart: as indexed
        digest = checkout.digest(source)
        # Now skipped by content: it stays as indexed (ChunkHound would not re-read it either).
        if digest is not None and (state.content_hash is None or digest != state.content_hash):
            changed.append(source)
    # A row the walk did not meet is deleted only when its file is gone: ChunkHound indexes some files our walk
    # skips (PDFs, big JSON), and it keeps those until they go.
    # Gone means no entry at all: a FIFO or a link to a device where a file was is noted when a hit is read.
    deleted = sorted(path for path in rows if path not in present and not os.path.lexists(root / path))
    return Drift(
        tuple(s.rel for s in changed),
        tuple(s.rel for s in new),
        tuple(deleted),
        tuple(sorted(changed + new, key=_rel)),
        len(present),
    )


def state_of(source: SourceFile, digest: str | None) -> FileState:
    """The ``files`` row state ChunkHound would write for the file now."""
    return FileState(source.size, source.mtime, digest)


def _differs(state: FileState, source: SourceFile) -> bool:
    return not (
        state.size == source.size and state.mtime is not None and abs(state.mtime - source.mtime) <= MTIME_EPSILON
    )


def _rel(source: SourceFile) -> str:
    return source.rel
