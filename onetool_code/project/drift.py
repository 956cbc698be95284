"""How far a checkout is from its index: the files the index would hold now (the walk ChunkHound's rules and
``.gitignore`` decide) against its ``files`` rows, changed, new and deleted.

Size and mtime decide first, as ChunkHound's own re-index does (within its mtime tolerance); only a file whose
stat differs is read, and its xxh3-64 ``content_hash`` decides (a ``git checkout`` that rewrites a file with the
same bytes is no change).

The trap is the cost: every search asks. A long-lived process keeps what the last walk met (``Checkout``) and,
from its second check on, watches the walked directories (``watch``): a check reads what the kernel queued
since the last one and stats only those names, walking only folders made since; no event, and the last drift
answers again (Django: 25 ms of stats per search before, nothing measurable now; ``bench/overlay.py``). Without a
watch, a check stats every walked directory (a file added, removed or renamed changes its directory's mtime, and
so does an editor that saves by renaming), every rule file and every walked file (an edit in place changes only
the file's own), and walks again only when a directory or rule file changed. Either way an edit is seen by the
first check after it is saved.

``.git`` is not watched (nor walked): a ``git checkout`` rewrites the work tree's files, which are; ``HEAD``
alone says nothing the files do not. A row of the index in a folder the walk skips is found deleted by the next
check that has something to do (the watch sees no event there).
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import xxhash

from onetool_code.hits import FileRow, FileState
from onetool_code.project.placement import MTIME_EPSILON
from onetool_code.project.walk import SourceFile, read_file, walk, walk_entry
from onetool_code.project.watch import Unwatchable, Watch

_UNKNOWN = FileState()  # a ``files`` row with no size, mtime or hash
# A change to one of these names can change which files the walk keeps anywhere below: only a walk can tell.
_RULE_NAMES = frozenset({".gitignore", "pyvenv.cfg"})
# A watched checkout is still stated this often: a change no event told of (a file system sending none that the
# watch could not recognise) is seen within it, for about 25 ms of stats a minute at Django.
VERIFY_SECONDS = 60.0


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
    rules: tuple[tuple[str, int], ...]  # the rule files, likewise (-1: not there)

    def still_holds(self) -> bool:
        return all(_stated(path)[1] == mtime for path, mtime in (*self.directories, *self.rules))


class Checkout:
    """The files under one root as last walked, asked again cheaply (thread-safe: the MCP server's calls run on
    threads of their own).

    The first check walks (a one-shot process, the CLI, stops there). The second is a long-lived process's:
    it watches the walked directories (``project.watch``), then stats once to cover the time before the watches;
    from then on a check reads the watch's events and stats only the names they touch, walking only folders made
    since. A lost watch (its queue overflowed, a watched folder moved or gone) costs one walk, then is trusted
    again; where no watch can be had (not Linux, the watch limit, a network file system) every check stats."""

    def __init__(self, root: Path, exclude: frozenset[Path]) -> None:
        self.root = root
        self.exclude = exclude
        self._lock = threading.Lock()
        self._walked: _Walked | None = None
        # (path, size, mtime) -> xxh3-64 of the bytes, or None when the content is not indexed (binary, generated)
        self._hashes: dict[tuple[str, int, float], str | None] = {}
        self._watch: Watch | None = None
        self.unwatched: str | None = None  # why this checkout is not watched, once it cannot be
        self._generation = 0  # counts the changes a watch has seen: the same count, the same files
        self._verified = 0.0  # when the watched files were last stated
        self._known: dict[str, SourceFile] = {}  # rel -> file, while watched
        # The last drift of a watched checkout, by the rows it was told and the change count: no event, no work.
        self.last: tuple[Sequence[FileRow], int, Drift] | None = None

    def files(self) -> tuple[SourceFile, ...]:
        """The files the index would hold now, each with its current size and mtime."""
        return self.seen()[0]

    def seen(self) -> tuple[tuple[SourceFile, ...], int | None]:
        """The files now, and the watch's change count (None when not watched: each check may differ)."""
        with self._lock:
            walked = self._walked
            if walked is None:
                self._walked = _walk(self.root, self.exclude)
                return self._walked.files, None
            if self._watch is None and self.unwatched is None:
                self._start_watching(walked)
            if self._watch is None:
                return self._stated(self._walked or walked), None
            if not self._caught_up() or not self._verified_lately():
                self._rewalk()
            return self._walked.files, self._generation

    def _stated(self, walked: _Walked) -> tuple[SourceFile, ...]:
        if not walked.still_holds():
            walked = self._walked = _walk(self.root, self.exclude)
            return walked.files
        return tuple(_restat(walked.files))

    def _start_watching(self, walked: _Walked) -> None:
        try:
            watch = Watch(self.root)
        except Unwatchable as exc:
            self.unwatched = str(exc)
            return
        for directory, _ in walked.directories:
            watch.add(directory)
        if watch.failure is not None:
            watch.close()
            self.unwatched = watch.failure
            return
        if not walked.still_holds():  # a folder or rule file changed before the watches were set
            watch.close()
            self._rewalk()
            return
        self._watch = watch
        files = tuple(_restat(walked.files))  # the edits in place made before the watches were set
        self._walked = dataclasses.replace(walked, files=files)
        self._known = {source.rel: source for source in files}
        self._verified = time.monotonic()
        self._generation += 1

    def _rewalk(self) -> None:
        """A walk that sets a new watch on each directory before listing it."""
        if self._watch is not None:
            self._watch.close()
        self._watch = None
        try:
            watch = Watch(self.root)
        except Unwatchable as exc:
            self.unwatched = str(exc)
            self._walked = _walk(self.root, self.exclude)
            return
        self._walked = _walk(self.root, self.exclude, watch.add)
        if watch.failure is not None:
            watch.close()
            self.unwatched = watch.failure
            return
        self._watch = watch
        self._known = {source.rel: source for source in self._walked.files}
        self._verified = time.monotonic()
        self._generation += 1

    def _verified_lately(self) -> bool:
        """Whether the watched files were stated within ``VERIFY_SECONDS``, or are as the watch says now."""
        assert self._walked is not None
        if time.monotonic() - self._verified < VERIFY_SECONDS:
            return True
        walked = self._walked
        if not walked.still_holds() or tuple(_restat(walked.files)) != walked.files:
            return False
        self._verified = time.monotonic()
        return True

    def _caught_up(self) -> bool:
        """The watch's events applied to the files; False when only a walk can tell (events lost, a rule file
        or a watched folder changed)."""
        assert self._watch is not None and self._walked is not None
        touched = self._watch.changes()
        if touched is None:
            return False
        if _stated(self._walked.rules[0][0]) != self._walked.rules[0]:
            return False  # .git/info/exclude, the one rule file outside the watched folders
        if not touched:
            return True
        root = str(self.root)
        made: list[SourceFile] = []
        for entry in touched:
            rel_dir = entry.directory[len(root) + 1 :] if entry.directory != root else ""
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.name in _RULE_NAMES or (not rel_dir and entry.name == ".chignore"):
                return False
            # Met again as the walk would meet it: gone, too large now, a folder where a file was, or new.
            self._known.pop(rel, None)
            found = walk_entry(self.root, rel_dir, entry.name, exclude=self.exclude, entered=self._watch.add)
            if self._watch.failure is not None:
                return False
            made.extend(found.files)
        for source in made:
            self._known[source.rel] = source
        self._walked = dataclasses.replace(self._walked, files=tuple(sorted(self._known.values(), key=_rel)))
        self._generation += 1
        return True

    def digest(self, source: SourceFile) -> str | None:
        """The file's ChunkHound content hash, or None when its content is not indexed; kept per stat."""
        key = (source.rel, source.size, source.mtime)
        if key not in self._hashes:
            data = read_file(source)
            self._hashes[key] = None if isinstance(data, str) else xxhash.xxh3_64_hexdigest(data)
        return self._hashes[key]

    def close(self) -> None:
        """Stop watching (the watch's file descriptor closed)."""
        with self._lock:
            if self._watch is not None:
                self._watch.close()
                self._watch = None


def _walk(root: Path, exclude: frozenset[Path], entered: Callable[[str], bool] | None = None) -> _Walked:
    rules = [_stated(path) for path in _rule_files(root)]  # before the walk: a change during it is seen next time
    result = walk(root, exclude=exclude, entered=entered)
    # A .gitignore made later changes its directory's mtime: only those there now are stated again.
    ignores = (_stated(f"{directory}/.gitignore") for directory, _ in result.directories)
    rules += [stated for stated in ignores if stated[1] != -1]
    return _Walked(tuple(result.files), tuple(result.directories), tuple(rules))


def _rule_files(root: Path) -> Iterable[str]:
    """The ignore files that decide the walk beside the ``.gitignore`` files: an edit in place changes their own
    mtime, not their directory's."""
    yield str(root / ".git" / "info" / "exclude")  # first: the one a watch cannot see
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
    files, generation = checkout.seen()
    last = checkout.last
    if generation is not None and last is not None and last[0] is indexed and last[1] == generation:
        return last[2]
    rows = {row.path: row.state for row in indexed}
    changed: list[SourceFile] = []
    new: list[SourceFile] = []
    present: set[str] = set()
    root = checkout.root
    real_root = Path(os.path.realpath(root))
    for source in files:
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
    found = Drift(
        tuple(s.rel for s in changed),
        tuple(s.rel for s in new),
        tuple(deleted),
        tuple(sorted(changed + new, key=_rel)),
        len(present),
    )
    if generation is not None:
        checkout.last = (indexed, generation, found)
    return found


def state_of(source: SourceFile, digest: str | None) -> FileState:
    """The ``files`` row state ChunkHound would write for the file now."""
    return FileState(source.size, source.mtime, digest)


def _differs(state: FileState, source: SourceFile) -> bool:
    return not (
        state.size == source.size and state.mtime is not None and abs(state.mtime - source.mtime) <= MTIME_EPSILON
    )


def _rel(source: SourceFile) -> str:
    return source.rel
