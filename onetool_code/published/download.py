"""Objects of a version fetched into files: resumed from what a killed fetch left, each checked against its
manifest's size and sha256 before it is used, several at once (the client, sha256 and the disk's writes let go
of the GIL and overlap), with free disk space checked first and one progress bar."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from onetool_code import progress
from onetool_code.published import manifest
from onetool_code.published.store import Store, StoreError

SPARE_BYTES = 256 << 20  # left free on the cache's disk after a fetch
DOWNLOADS = 4  # objects fetched at once


def room(home: Path, found: manifest.Manifest, needed: int) -> None:
    free = shutil.disk_usage(home).free
    if needed + SPARE_BYTES > free:
        raise StoreError(
            f"not enough free space in {home} to fetch version {found.version} ({needed / 1e6:,.0f} MB needed, "
            f"{free / 1e6:,.0f} MB free); set ONETOOL_CODE_CACHE_DIR to a folder on a larger disk"
        )


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def fetch_all(store: Store, todo: list[tuple[manifest.Item, Path]], target: Path, size: int) -> None:
    """Each object into its path (resumed, verified), with one progress bar over them all."""
    watcher = progress.watcher()
    reading = watcher(target) if watcher is not None else None
    done = [sum(min(size_of(path), item.size) for item, path in todo)]
    counted = threading.Lock()

    def told(n: int) -> None:
        with counted:
            done[0] += n
            _shown(reading, done[0], size)

    pool = ThreadPoolExecutor(DOWNLOADS)  # the client, sha256 and writes let go of the GIL
    try:
        for future in [pool.submit(fetch, store, item, path, told) for item, path in todo]:
            future.result()
    finally:
        pool.shutdown(cancel_futures=True)
        if reading is not None:
            reading.close()


def _shown(reading: progress.Reading | None, done: int, total: int) -> None:
    if reading is not None:
        reading("MB from the store", done >> 20, total >> 20)


def fetch(store: Store, item: manifest.Item, path: Path, told: Callable[[int], None]) -> int:
    """One object into ``path``, resumed from what a killed fetch left there; ``told`` hears each block's size;
    returns the bytes fetched now."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    digest = hashlib.sha256()
    offset = path.stat().st_size if path.is_file() else 0
    if offset > item.size:
        path.unlink()
        offset = 0
    if offset:
        with path.open("rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    fetched = 0
    if offset < item.size or item.size == 0:
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as out:
            for block in store.stream(item.key, offset, item.size) if offset < item.size else ():
                if offset + fetched + len(block) > item.size:
                    raise StoreError(f"{store.location.url}/{item.key} is longer than its manifest says: refused")
                out.write(block)
                digest.update(block)
                fetched += len(block)
                told(len(block))
            out.flush()
            os.fsync(out.fileno())  # on disk before the version is renamed into place: whole after a crash
    if digest.hexdigest() != item.sha256:
        path.unlink()
        raise StoreError(
            f"{store.location.url}/{item.key} does not match the sha256 its manifest gives: refused (the version "
            "is not used; it is fetched again at the next check)"
        )
    return fetched
