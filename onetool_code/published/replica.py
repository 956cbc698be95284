"""A published index on this machine: the newest version fetched into the cache directory, verified, and
searched as a local index is.

    <cache>/published/<url key>/state.json          the version in use, the manifest's ETag, the last check
    <cache>/published/<url key>/<version>/<project>/.chunkhound/db/chunks.db (and what was published beside it)
    <cache>/published/<url key>/<version>.partial/  a fetch under way (resumed by the next one)

A version is fetched whole into its ``.partial`` folder, every object checked against the manifest's size and
sha256, then renamed into place: a search never reads half a version. The manifest is asked for again at most
every ``refresh`` seconds, with ``If-None-Match``: an unchanged version costs one small request and is never
downloaded again. A store that cannot be reached leaves the cached version answering, with a note; with no
cached version it is one clear error. One process per machine fetches (a lock file); the others wait for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onetool_code.errors import NotIndexedError, OneToolCodeError
from onetool_code.published import download, manifest
from onetool_code.published.environment import Environment
from onetool_code.published.store import Location, Missing, Store, StoreError, Unchanged
from onetool_code.reading import PUBLISHED_MARKER
from onetool_code.schema import DB_FILE_NAME, WAL_SUFFIX
from onetool_code.spans import note

if TYPE_CHECKING:
    from onetool_code.published.rows import RemoteRows

DB_FOLDER = (".chunkhound", "db")  # where a version's files go under its project folder: ChunkHound's default


@dataclass(frozen=True)
class Fetched:
    """What a project folder fetched to this machine holds: which version of which store, and its checkout."""

    url: str
    version: str
    created: float  # when the version was published
    git: dict[str, Any] | None  # the publisher's commit and whether its tree was dirty, when it was in git
    rows_in_store: bool = False  # float32 rows still read from the store by range (a fetch of them under way)


@dataclass(frozen=True)
class Version:
    """A version on this machine: its project folder (what a search is given as its root) and manifest."""

    root: Path
    manifest: manifest.Manifest


_NOTICES: dict[str, str] = {}  # a root -> why it answers from a version that may not be the newest
_REACH: dict[str, tuple[Location, Environment]] = {}  # a version's root -> its store, as this process reached it
_FETCHED_HERE: set[str] = set()  # the versions this process fetched: a one-shot search leaves their rows to the next
_LOCK = threading.Lock()
_background = False
_running: dict[str, threading.Thread] = {}


def refresh_in_background() -> None:
    """For long-lived hosts: a due check runs in a thread, and the search answers from the version at hand."""
    global _background
    _background = True


def reset() -> None:
    """Check inline again and forget notes (for tests; running checks finish unobserved)."""
    global _background
    _background = False
    _NOTICES.clear()


def notice(db_path: Path) -> str | None:
    """What a search of the index file ``db_path`` must say about the version it answers from (None for a local
    index)."""
    return _NOTICES.get(str(_project_folder(db_path)))


def fetched(folder: Path, cache_root: Path) -> Fetched | None:
    """The version a project folder holds when this machine fetched it into its cache; None for any other folder
    (a repository's own files cannot claim to be a published index). ``folder`` may be an index file, for the
    folder that holds it."""
    if folder.name == DB_FILE_NAME:
        folder = _project_folder(folder)
    try:
        if not folder.resolve().is_relative_to((cache_root / "published").resolve()):
            return None
        marker = json.loads((folder / PUBLISHED_MARKER).read_text(encoding="utf-8"))
        git = marker.get("git")
        digests = folder.joinpath(*DB_FOLDER).glob(f"*/vectors-*/*{manifest.BLOCKS}")
        left = any(not path.with_name(path.name.removesuffix(manifest.BLOCKS)).exists() for path in digests)
        return Fetched(
            str(marker["url"]),
            str(marker["version"]),
            float(marker["created"]),
            git if isinstance(git, dict) else None,
            left,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _project_folder(db_path: Path) -> Path:
    """The project folder of a fetched version's index file (``<project>/.chunkhound/db/chunks.db``)."""
    return db_path.parents[len(DB_FOLDER)] if len(db_path.parents) > len(DB_FOLDER) else db_path


def place(text: str, env: Environment) -> Path:
    """The project folder that a search of the store URL ``text`` reads: the newest version, fetched if need be
    (but for its index file, while the snapshot shipped with it serves: ``complete`` fetches it when it does not;
    and for its float32 rows, read by ranges until they are here: ``rows.py``). The rows are fetched whole in a
    thread started by the first search of a process that finds the version here already (a first search on a
    machine does not share its two cores with that download), and at once in a long-lived host."""
    location = Location.parse(text)
    home = folder(location, env)
    held = _held(home)
    if held is None or _due(home, env):
        if held is not None and _background:
            with _LOCK:
                if location.url not in _running or not _running[location.url].is_alive():
                    thread = threading.Thread(target=_check_quietly, args=(location, home, env), daemon=True)
                    _running[location.url] = thread
                    thread.start()
        else:
            held = _check(location, home, env)
    with _LOCK:
        _REACH[str(held.root)] = (location, env)
    if _background or str(held.root) not in _FETCHED_HERE:
        from onetool_code.published import rows  # numpy's: not at the pack's start-up

        rows.fill_in_background(held.root, held.manifest, _rows_here(held), location, env)
    return held.root


def complete(db_path: Path) -> None:
    """Fetch what a version fetched by this process left in the store (its index file, and WAL), when a search
    needs them after all: snapshots off, or a shipped snapshot this reader cannot use. Nothing for any other
    file."""
    root = _project_folder(db_path)
    with _LOCK:
        reach = _REACH.get(str(root))
    if reach is None or db_path.exists():
        return
    location, env = reach
    home = folder(location, env)
    with _machine_lock(home):
        found = _version(root.parent).manifest
        where = root.joinpath(*DB_FOLDER)
        todo = [(item, where / item.key.removeprefix(found.folder())) for item in found.items]
        todo = [(item, path) for item, path in todo if item.key in _database(found) and not path.exists()]
        if not todo:
            return
        parts = [(item, path.with_name(path.name + manifest.FETCHING)) for item, path in todo]
        size = sum(item.size for item, _ in todo)
        download.room(home, found, size - sum(min(download.size_of(part), item.size) for item, part in parts))
        note(f"fetching the index file of version {found.version} of {location.url} ({size / 1e6:,.1f} MB)")
        download.fetch_all(Store(location, env), parts, root.parent, size)
        for (_, path), (_, part) in sorted(zip(todo, parts, strict=True), key=lambda pair: pair[0][1] == db_path):
            os.utime(part, (found.created, found.created))  # the WAL first: the file never shows without it
            part.rename(path)


def folder(location: Location, env: Environment) -> Path:
    """Where this machine keeps the versions of one store URL."""
    return env.cache_root / "published" / hashlib.sha256(location.url.encode()).hexdigest()[:16]


def database(text: str, env: Environment) -> Path:
    """The index file of the store URL ``text``'s newest version: searched against a checkout of the project on
    this machine (``db``), whose files hits are read from, with the same checks as a local index's."""
    return place(text, env).joinpath(*DB_FOLDER, DB_FILE_NAME)


def _check_quietly(location: Location, home: Path, env: Environment) -> None:
    """A background check: what goes wrong is told by ``notice`` at the next search (``_check`` sets it)."""
    with contextlib.suppress(OneToolCodeError):
        _check(location, home, env)


def _check(location: Location, home: Path, env: Environment) -> Version:
    """Ask the store for its newest manifest (conditionally) and fetch its version when it is new."""
    with _machine_lock(home):
        held = _held(home)
        if held is not None and not _due(home, env):
            return held  # another process checked while this one waited
        state = _state(home)
        try:
            store = Store(location, env)
            data, etag = store.get(manifest.LATEST, etag=state.get("etag") if held else None, limit=manifest.MAX_BYTES)
        except Unchanged:
            return _keep(home, held, state.get("etag"))
        except StoreError as exc:
            return _unreachable(location, home, held, state, exc)
        try:
            found = manifest.loads(data, location.url)
            if held is not None and found.version == held.manifest.version:
                return _keep(home, held, etag)
            version = _fetch(store, found, home)
        except OneToolCodeError as exc:  # a version refused (or cut off): the one at hand answers, if any
            if held is None:
                raise
            return _unreachable(location, home, held, state, exc)
        _write_state(home, {"version": found.version, "etag": etag, "checked": time.time()})
        _NOTICES.pop(str(version.root), None)
        _FETCHED_HERE.add(str(version.root))
        _remove_old(home, keep={found.version, held.manifest.version if held else found.version})
        note(f"fetched version {found.version} of {location.url} ({found.size / 1e6:,.1f} MB)")
        return version


def _keep(home: Path, held: Version | None, etag: str | None) -> Version:
    assert held is not None
    _write_state(home, {"version": held.manifest.version, "etag": etag, "checked": time.time()})
    _NOTICES.pop(str(held.root), None)
    return held


def _unreachable(location: Location, home: Path, held: Version | None, state: dict, exc: OneToolCodeError) -> Version:
    """The version at hand, with a note saying why it may not be the newest (the store is asked again after
    ``refresh`` seconds, not at every search); with none, the one error."""
    if held is None:
        if isinstance(exc, Missing):
            raise NotIndexedError(
                f"no index is published at {location.url} (no {manifest.LATEST}): publish one with "
                f"python -m onetool_code publish {location.url}"
            ) from None
        raise StoreError(f"{exc}; and no version of {location.url} is cached on this machine") from None
    _write_state(home, {**state, "checked": time.time()})
    made = held.manifest.created
    _NOTICES[str(held.root)] = (
        f"{exc}; answering from version {held.manifest.version} of {location.url}, published "
        f"{_age(time.time() - made)} ago"
    )
    note(_NOTICES[str(held.root)])
    return held


def _fetch(store: Store, found: manifest.Manifest, home: Path) -> Version:
    """The version's objects into ``<version>.partial`` (what is there already is kept, checked and completed),
    each verified, then the folder renamed into place."""
    target = home / found.version
    if (target / manifest.LATEST).is_file():
        return _version(target)
    partial = home / f"{found.version}.partial"
    partial.mkdir(mode=0o700, parents=True, exist_ok=True)
    where = partial / found.project / Path(*DB_FOLDER)
    left = _left_in_store(found)
    for key in left:  # what a killed fetch of another reader left of them: never taken for whole
        (where / key.removeprefix(found.folder())).unlink(missing_ok=True)
    todo = [(item, where / item.key.removeprefix(found.folder())) for item in found.items if item.key not in left]
    size = sum(item.size for item, _ in todo)
    download.room(home, found, size - sum(min(download.size_of(path), item.size) for item, path in todo))
    download.fetch_all(store, todo, target, size)
    for _, path in todo:  # as old as the version: a search reads the file at once, not after a quiet spell
        os.utime(path, (found.created, found.created))
    marker = {"url": store.location.url, "version": found.version, "created": found.created, "git": found.git}
    (partial / found.project / PUBLISHED_MARKER).write_text(json.dumps(marker), encoding="utf-8")
    (partial / manifest.LATEST).write_bytes(found.dumps())  # last: a version folder holding it is whole
    partial.rename(target)
    return _version(target)


def _left_in_store(found: manifest.Manifest) -> set[str]:
    """The keys a first fetch leaves in the store, when the version ships a snapshot: the index file and its WAL
    (a reader that can use the snapshot never opens the file; two thirds of a version's bytes), and the float32
    rows that have block digests beside them (a search reads a few hundred rows by range; fetched whole later)."""
    return _database(found) | _rows(found)


def _database(found: manifest.Manifest) -> set[str]:
    base = found.folder() + DB_FILE_NAME
    if not any(i.key.startswith(base + manifest.SHIPPED) and i.key.endswith("/snapshot.json") for i in found.items):
        return set()
    return {base, base + WAL_SUFFIX}


def _rows(found: manifest.Manifest) -> set[str]:
    keys = {i.key for i in found.items}
    shipped = found.folder() + DB_FILE_NAME + manifest.SHIPPED
    return {k.removesuffix(manifest.BLOCKS) for k in keys if k.startswith(shipped) and k.endswith(manifest.BLOCKS)} & (
        keys if _database(found) else set()
    )


def _rows_here(held: Version) -> list[tuple[manifest.Item, Path]]:
    """The rows a version left in the store, each with the path it lands at."""
    where, keys = held.root.joinpath(*DB_FOLDER), _rows(held.manifest)
    return [(i, where / i.key.removeprefix(held.manifest.folder())) for i in held.manifest.items if i.key in keys]


def remote_rows(db_path: Path, folder: Path, shape: tuple[int, int]) -> RemoteRows:
    """The float32 rows of a shipped snapshot's vector set ``folder`` (adopted for the index file ``db_path``)
    that its version left in the store: read from it by range until they are here whole."""
    root = _project_folder(db_path)
    with _LOCK:
        reach = _REACH.get(str(root))
    found = _version(root.parent) if reach is not None else None
    from onetool_code.published.rows import RemoteRows

    tail = f"/{folder.name}/matrix.npy"
    for item, path in _rows_here(found) if found is not None else ():
        if item.key.endswith(tail):
            digests = (folder / ("matrix.npy" + manifest.BLOCKS)).read_bytes()
            return RemoteRows(Store(*reach), item, digests, shape, path, folder / "matrix.npy")
    raise StoreError(f"the vectors of {db_path} are not on this machine: search its store URL to fetch them")


def _held(home: Path) -> Version | None:
    """The version in use on this machine, when it is whole."""
    name = _state(home).get("version")
    if not isinstance(name, str) or not manifest.VERSION.match(name):
        return None
    try:
        return _version(home / name)
    except (OSError, ValueError, manifest.ManifestError):
        return None


def _version(folder: Path) -> Version:
    found = manifest.loads((folder / manifest.LATEST).read_bytes(), str(folder))
    return Version(folder / found.project, found)


def _due(home: Path, env: Environment) -> bool:
    checked = _state(home).get("checked")
    return not isinstance(checked, (int, float)) or time.time() - checked >= env.refresh


def _state(home: Path) -> dict:
    try:
        found = json.loads((home / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _write_state(home: Path, state: dict) -> None:
    temporary = home / f"state.json.{os.getpid()}-{threading.get_ident()}"
    temporary.write_text(json.dumps(state), encoding="utf-8")
    temporary.replace(home / "state.json")


def _remove_old(home: Path, keep: set[str]) -> None:
    """Versions but the one in use and the one before (a search of another process may still read it)."""
    for folder in home.iterdir():
        name = folder.name.removesuffix(".partial")
        if folder.is_dir() and manifest.VERSION.match(name) and name not in keep:
            aside = home / f"{folder.name}.gone-{os.getpid()}"
            with contextlib.suppress(OSError):
                folder.rename(aside)
                shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def _machine_lock(home: Path) -> Iterator[None]:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _LOCK_FOR.setdefault(str(home), threading.Lock()):
        fd = os.open(home / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


_LOCK_FOR: dict[str, threading.Lock] = {}


def _age(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
