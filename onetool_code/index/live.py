"""Keeping up with a live index: which snapshot answers a search, and when and from where a new state is read.

The trap: DuckDB lets no writer in while any reader has the file open, and ChunkHound fails (losing the new
files) when it finds one; its MCP server (a daemon) holds the file read-write all day and re-indexes each saved
file. So the file is never opened while another process holds it, and searches answer from snapshots
(``snapshot.py``):

- a state already read is mapped, and opens nothing;
- a changed state is read once for the machine (a lock in the cache directory; racing processes wait and map
  what the first one wrote), once the file and its WAL have been quiet for ``QUIET_SECONDS`` (ChunkHound may
  close and reopen the file between phases of one run; ``COPY_QUIET_SECONDS`` when a copy is read), as a delta
  against the last base when it can be;
- from the file itself when no process holds it read-write (held only while its rows are read), else from a
  private copy (``private_copy.py``): copied when a search needs the new state, not at every write;
- while the file is being written, searches answer from the last snapshot and say so;
- a long-lived process (the MCP server, OneTool) refreshes in the background: a search waits at most
  ``FRESH_WAIT_SECONDS`` for it, then answers from the last snapshot with a note. A one-shot command refreshes
  inline, at the cost of the delta. Only the first read of an index, with no snapshot to answer from, makes a
  search wait: it tells the call's watcher how it goes (``progress.watching``), so the entry point that owns a
  channel can show it.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from onetool_code import progress, published
from onetool_code.errors import CopyError, IndexLockedError, IndexUnreadableError
from onetool_code.index import database, holders, private_copy, shipped, snapshot, store
from onetool_code.index.snapshot import Snapshot
from onetool_code.index.store import STORE, Key, Signature, cache_root, folder, machine_lock, publish, spill_folder
from onetool_code.spans import note

if TYPE_CHECKING:
    import duckdb

KIND = "snapshot"
# How long the index file must be unchanged (and its WAL too) before it is read: longer than ChunkHound's pause
# between closing the file and opening it again within one run.
QUIET_SECONDS = 2.0
# How long the file must be unchanged before a private copy is taken while a writer holds it: a copy never gets in
# the writer's way (its consistency is checked), so this only spares copies while ChunkHound writes a batch.
COPY_QUIET_SECONDS = 0.5
# How long a search waits for a file that keeps changing with no snapshot to answer from before reading it anyway.
PATIENCE_SECONDS = 30.0
# How long a long-lived process's search waits for its background refresh before answering from the last snapshot.
FRESH_WAIT_SECONDS = 1.0
# How often a search looks again when the file vanishes while it is read (a compaction moves it aside, then back).
VANISHED_RETRIES = 3
# Folders earlier versions of onetool-code wrote to the cache directory.
_RETIRED = ("vectors", "lexical")


@dataclass(frozen=True)
class View:
    """The snapshot a search answers from, and a one-line notice when it is not the file's current state."""

    snapshot: Snapshot
    notice: str | None = None


@dataclass
class _Job:
    """One background refresh of one index file."""

    started: float = field(default_factory=time.time)
    done: threading.Event = field(default_factory=threading.Event)
    view: View | None = None
    error: Exception | None = None


_JOBS: dict[str, _Job] = {}
_JOBS_LOCK = threading.Lock()
_background = False
# How long a process that exits waits for the refreshes it started (``_finish_refreshes``).
EXIT_WAIT_SECONDS = 30.0


def _finish_refreshes() -> None:
    """A refresh runs in a daemon thread (a host that stops must not hang on it), inside DuckDB's native code for
    most of its time: a process that exited under it would tear DuckDB down while the thread still reads through
    it, and abort. So an exiting process waits for the refreshes it started, for a bounded time: the snapshot
    they finish is the next process's fresh start."""
    deadline = time.monotonic() + EXIT_WAIT_SECONDS
    with _JOBS_LOCK:
        running = [job for job in _JOBS.values() if not job.done.is_set()]
    for job in running:
        job.done.wait(max(0.0, deadline - time.monotonic()))


atexit.register(_finish_refreshes)


def refresh_in_background() -> None:
    """For long-lived hosts (the MCP server, the OneTool pack): a search that finds the index changed starts a
    refresh in a thread and waits for it at most ``FRESH_WAIT_SECONDS``."""
    global _background
    _background = True


def reset() -> None:
    """Refresh inline again, and forget finished and running jobs (their threads finish unobserved)."""
    global _background
    _background = False
    with _JOBS_LOCK:
        _JOBS.clear()


def forget(db_path: Path) -> None:
    """Let go of the snapshot this process holds of the file (it turned out damaged): the next view reads it."""
    STORE.discard(Key(KIND, str(db_path)))


def refreshing(db_path: Path) -> float | None:
    """When this process's background refresh of the file started, if one is running."""
    with _JOBS_LOCK:
        job = _JOBS.get(str(db_path))
    return None if job is None or job.done.is_set() else job.started


def view(project_root: Path, db_path: Path) -> View:
    """The snapshot of the file's current state (mapped, read now, or waited for), or the last one with a notice
    while the file is being written, compacted, refreshed in the background or is missing; the "in use" error when
    there is none, "not indexed" only when there is no file, no compaction and no snapshot."""
    for _ in range(VANISHED_RETRIES):
        try:
            return _view(project_root, db_path)
        except FileNotFoundError as exc:
            if not str(exc.filename or "").startswith(str(db_path)):
                raise
            # ChunkHound's compaction moved the file aside between two looks at it: look again.
            note(f"{db_path} was moved while it was read: looked again")
    return _view(project_root, db_path)


def _view(project_root: Path, db_path: Path) -> View:
    key = Key(KIND, str(db_path))
    if not db_path.exists():
        left = shipped.left_in_store(db_path)
        current = _current(key, db_path, left) if left is not None else None
        if current is not None:
            return View(current)
        published.complete(db_path)  # a fetched version whose shipped snapshot cannot serve: its file after all
    if not db_path.exists():
        last = _last(key, db_path)
        if last is not None:
            if holders.compacting(db_path):
                return View(last, f"the index is being compacted by ChunkHound; this answer is from {_when(last)}")
            if not db_path.exists():  # not back from a compaction that ended meanwhile: moved or removed
                return View(
                    last,
                    f"the index file {db_path} is missing and no compaction is moving it (if it was removed, index "
                    f"again: chunkhound index {project_root}); this answer is from {_when(last)}",
                )
    database.check_file(project_root, db_path)  # with no snapshot to answer from, waits for the compacted file
    current = _current(key, db_path)
    if current is not None:
        return View(current)
    if _background:
        last = _last(key, db_path)
        if last is not None:
            job = _job(project_root, db_path, key)
            job.done.wait(FRESH_WAIT_SECONDS)
            if job.view is not None:
                return job.view
            if job.error is not None:
                note(f"the background refresh of {db_path} failed: {job.error}")
                return View(last, f"{_first_line(job.error)}; this answer is from {_when(last)}")
            return View(
                last, f"the index changed and is being read in the background; this answer is from {_when(last)}"
            )
    return _refresh(project_root, db_path, key)


def _job(project_root: Path, db_path: Path, key: Key) -> _Job:
    """The running background refresh of the file, started if there is none."""
    with _JOBS_LOCK:
        job = _JOBS.get(str(db_path))
        if job is not None and not job.done.is_set():
            return job
        job = _JOBS[str(db_path)] = _Job()

    def run() -> None:
        try:
            job.view = _refresh(project_root, db_path, key)
        except Exception as exc:  # reported by the next search that waits on it, as its notice
            job.error = exc
        finally:
            job.done.set()

    threading.Thread(target=run, name=f"onetool-code refresh {db_path.name}", daemon=True).start()
    return job


def _refresh(project_root: Path, db_path: Path, key: Key) -> View:
    with machine_lock(key):
        last = None
        deadline = time.monotonic() + PATIENCE_SECONDS
        while True:
            current = _current(key, db_path)
            if current is not None:
                return View(current)
            holder = holders.writer(db_path)
            quiet = QUIET_SECONDS if holder is None else COPY_QUIET_SECONDS
            settle = Signature.of(db_path).changed + quiet - time.time()
            if settle > 0:
                last = last or (_last(key, db_path) if holder is not None else None)
                if last is not None:
                    return View(last, _being_written(holder, last))
                if time.monotonic() < deadline:
                    time.sleep(min(settle, 0.2))  # look again soon: a writer may take the file meanwhile
                    continue
            try:
                return View(_read(project_root, db_path, key, copy=holder is not None))
            except IndexLockedError:
                if holders.writer(db_path) is None:
                    raise
                continue  # a writer took the file as it was opened: it is changing again
            except CopyError as exc:
                last = last or _last(key, db_path)
                if last is None:
                    raise IndexLockedError(
                        f"the index is in use by {_who(holder)} and cannot be copied to be read: {exc}"
                    ) from exc
                return View(last, f"{exc}; this answer is from {_when(last)}")


def _read(project_root: Path, db_path: Path, key: Key, *, copy: bool) -> Snapshot:
    """Read the file's state, from the file or from a private copy, as a delta against the last base when it
    can; publish it."""
    base = _base(key, db_path)
    report, done = _reporter(db_path, first=base is None)
    copy_seconds = 0.0
    spilled: Path | None = None
    finish: Callable[[], Snapshot | None] | None = None
    try:
        with contextlib.ExitStack() as stack:
            if copy:
                taken = stack.enter_context(private_copy.taken(db_path))
                signature, copy_seconds = taken.signature, taken.seconds
                con = stack.enter_context(_opened(taken.path))
            else:
                con = stack.enter_context(database.connect(project_root, db_path))
                signature = Signature.of(db_path)  # the connection's lock keeps writers out: this is the state read
            target = folder(key, signature, snapshot.FORMAT)
            spilled = spill_folder(target)
            made = None if base is None else snapshot.read_delta(con, db_path, signature, target, base)
            finish = (
                (lambda: made) if made is not None else snapshot.read_whole(con, db_path, signature, target, report)
            )
        result = finish()  # the file (or its copy) is closed: what is left is derived in memory
        assert result is not None
        if copy_seconds:
            result = dataclasses.replace(result, copy_seconds=copy_seconds)
        published = publish(target, result.save, keep=None if result.base is None else result.base.folder)
    finally:
        done()
        if isinstance(finish, snapshot.Finish):
            finish.cancel()  # a read that failed before it finished leaves no child process writing (``spilled``)
        if spilled is not None:
            shutil.rmtree(spilled, ignore_errors=True)  # what was not published; mappings of it live on
    if published and result.base is None:
        result = _load(target, db_path) or result  # mapped: the pages are shared, the heap copies go (a delta's
        # base is mapped already, and its own arrays are small)
    _prune()
    STORE.put(key, signature, result)
    STORE.builds += 1
    kind = f"a delta of {result.delta_chunks} chunks" if result.base is not None else "read whole"
    note(f"snapshot of {db_path} made ({kind}{', from a copy' if copy else ''}): held {result.read_seconds:.2f} s")
    return result


@contextlib.contextmanager
def _opened(copy: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A private copy, opened read-only. DuckDB replays the copied WAL as it opens it; one it cannot replay (HNSW
    changes may need the vss extension, never loaded here, in some duckdb versions; 2.0 replays them) leaves the
    last snapshot answering until ChunkHound checkpoints."""
    try:
        with database.session(copy, read_only=True) as con:
            yield con
    except IndexUnreadableError as exc:
        raise CopyError(
            f"the index's latest changes cannot be read yet (its WAL needs what ChunkHound has not checkpointed: "
            f"{str(exc).split(': ', 1)[-1][:200]})"
        ) from exc


def _reporter(db_path: Path, first: bool) -> tuple[snapshot.Report, Callable[[], None]]:
    """How the first read of an index (the long one) goes, told to the call's watcher when it has one; a delta
    is quick, and told to nobody."""
    watcher = progress.watcher() if first else None
    if watcher is None:
        return lambda what, done, total: None, lambda: None
    reading = watcher(db_path)
    return reading, reading.close


def _current(key: Key, db_path: Path, signature: Signature | None = None) -> Snapshot | None:
    """The snapshot of the file's state now (or of the state ``signature`` names): held by this process, or
    mapped from the cache directory."""
    signature = signature or Signature.of(db_path)
    held = STORE.fresh(key, signature)
    if held is not None:
        return held
    loaded = _load(folder(key, signature, snapshot.FORMAT), db_path)
    if loaded is None and shipped.adopt(key, db_path, signature):  # a published index's, fetched whole
        loaded = _load(folder(key, signature, snapshot.FORMAT), db_path)
    if loaded is not None:
        STORE.put(key, signature, loaded)
    return loaded


def _load(target: Path, db_path: Path) -> Snapshot | None:
    """A published snapshot; a delta's base is the one this process holds when it does."""
    held = {s.folder: s for held, _ in STORE.entries(KIND, db_path) for s in (held, held.base) if s is not None}

    def base(place: Path) -> Snapshot | None:
        return held.get(place) or snapshot.load(place, db_path, lambda _: None)

    return snapshot.load(target, db_path, base)


def _base(key: Key, db_path: Path) -> Snapshot | None:
    """The newest snapshot read whole of the file (what a delta is taken against): held by this process, or on
    disk (only its own folder is mapped, not the deltas taken against it)."""
    held = [s.base or s for s, _ in STORE.entries(KIND, db_path)]
    return _newest(key, db_path, held, bases_only=True)


def _last(key: Key, db_path: Path) -> Snapshot | None:
    """The newest snapshot of any earlier state of the file: held by this process, or on disk."""
    return _newest(key, db_path, [s for s, _ in STORE.entries(KIND, db_path)], bases_only=False)


def _newest(key: Key, db_path: Path, held: list[Snapshot], *, bases_only: bool) -> Snapshot | None:
    """The newest of the snapshots held and of those published (each folder's ``snapshot.json`` read; only the
    newest one loaded)."""
    newest: tuple[float, Path] | None = None
    for place in (cache_root() / key.kind).glob(f"{store.place(key)}-*"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            meta = json.loads((place / "snapshot.json").read_text(encoding="utf-8"))
            wanted = meta["base"] is None or not bases_only
            if wanted and ".tmp-" not in place.name and (newest is None or float(meta["created"]) > newest[0]):
                newest = (float(meta["created"]), place)
    if newest is not None and not any(s.folder == newest[1] for s in held):
        loaded = snapshot.load(newest[1], db_path, lambda _: None) if bases_only else _load(newest[1], db_path)
        if loaded is not None:
            held.append(loaded)
    return max(held, key=lambda s: s.created) if held else None


def _prune() -> None:
    """Remove the snapshots of index files that no longer exist, and what earlier versions left behind."""
    root = cache_root()
    for retired in _RETIRED:
        shutil.rmtree(root / retired, ignore_errors=True)
    for meta in (root / KIND).glob("*/snapshot.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            db_path = Path(json.loads(meta.read_text(encoding="utf-8"))["db_path"])
            if holders.gone(db_path) and shipped.left_in_store(db_path) is None:
                shutil.rmtree(meta.parent, ignore_errors=True)


def _who(pid: int | None) -> str:
    name = holders.process_name(pid) if pid is not None else ""
    return f"{name or 'another process'} (PID {pid})"


def _being_written(pid: int | None, last: Snapshot) -> str:
    name = holders.process_name(pid) if pid is not None else ""
    who = "ChunkHound" if "chunkhound" in name.lower() else (name or "another process")
    return f"the index is being updated by {who} (PID {pid}); this answer is from {_when(last)}"


def _when(last: Snapshot) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(last.created))
    return f"the snapshot of {stamp} ({age(time.time() - last.created)} old)"


def _first_line(exc: Exception) -> str:
    return str(exc).split("\n")[0]


def age(seconds: float) -> str:
    """``12 s``, ``4 min``, ``3 h``, ``2 days``."""
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
