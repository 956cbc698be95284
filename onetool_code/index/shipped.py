"""An index state that travels: exported whole for publishing, and adopted on arrival, so that a machine that
fetches a published index searches it without reading the DuckDB file first.

Export: a consistent copy of the file (its WAL too; ``private_copy``, as searches take one of a held file) and
a base snapshot of that copy, in ``chunks.db.snapshot-<FORMAT>`` beside it (with the block digests of its float32
rows, which a reader fetches after its first search: ``published/rows.py``). Adopt: a snapshot shipped beside an
index file that a fetch put in the cache directory's ``published`` folder becomes that file's snapshot in this
cache (its files linked, its record naming the file here). Anywhere else a shipped snapshot is ignored: a
repository's own files never decide what a search shows.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from onetool_code import progress
from onetool_code.index import database, private_copy, snapshot
from onetool_code.index.store import Key, Signature, cache_root, folder, publish, spill_folder
from onetool_code.published import manifest, rows
from onetool_code.schema import EMBEDDING_SIDECAR_SUFFIX, WAL_SUFFIX
from onetool_code.spans import note

SHIPPED = f"{manifest.SHIPPED}{snapshot.FORMAT}"  # a shipped snapshot's folder: the index file's name and this


def export(project_root: Path, db_path: Path, into: Path) -> dict[str, Any]:
    """The index's current state into ``into`` (``chunks.db``, its WAL and model record when present, its
    snapshot); returns the facts a manifest gives: schema version, vector sets, counts."""
    database.check_file(project_root, db_path)
    copy = into / db_path.name
    with private_copy.taken(db_path) as taken:
        shutil.move(taken.path, copy)
        wal = taken.path.with_name(taken.path.name + WAL_SUFFIX)
        if wal.exists():
            shutil.move(wal, copy.with_name(copy.name + WAL_SUFFIX))
    sidecar = db_path.with_name(db_path.name + EMBEDDING_SIDECAR_SUFFIX)
    if sidecar.is_file():
        shutil.copyfile(sidecar, copy.with_name(copy.name + EMBEDDING_SIDECAR_SUFFIX))
    watcher = progress.watcher()
    reading = watcher(db_path) if watcher is not None else None
    finish: snapshot.Finish | None = None
    try:
        with database.session(copy, read_only=True) as con:
            finish = snapshot.read_whole(
                con, copy, Signature.of(copy), into, reading if reading is not None else lambda *_: None
            )
            version = con.execute("SELECT max(version) FROM schema_version").fetchone()
        made = finish()
        shipped = copy.with_name(copy.name + SHIPPED)
        shipped.mkdir()
        made.save(shipped)  # moves what the read spilled
    finally:
        if finish is not None:
            finish.cancel()  # a read that failed before it finished leaves no child process behind
        if reading is not None:
            reading.close()
        shutil.rmtree(spill_folder(into), ignore_errors=True)  # what was not moved
    for matrix in shipped.glob("vectors-*/matrix.npy"):  # a reader fetches them later, reading ranges meanwhile
        rows.write_digests(matrix)
    return {
        "schema_version": None if version is None or version[0] is None else int(version[0]),
        "models": [
            {"provider": s.provider, "model": s.model, "dims": s.dims, "count": s.count}
            for s in made.layout.embedding_sets
        ],
        "files": len(made.files),
        "chunks": len(made.chunks),
    }


def left_in_store(db_path: Path) -> Signature | None:
    """The state a fetched version's shipped snapshot was read from, while the version's index file is still in
    the store (a reader that adopts the snapshot never needs it): what the snapshot is kept under meanwhile. None
    for a file that is here, or that is not a published version's."""
    shipped = db_path.with_name(db_path.name + SHIPPED)
    try:
        if db_path.exists() or not db_path.resolve().is_relative_to((cache_root() / "published").resolve()):
            return None
        return Signature.recorded(json.loads((shipped / "snapshot.json").read_text(encoding="utf-8"))["signature"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def adopt(key: Key, db_path: Path, signature: Signature) -> bool:
    """Make the snapshot shipped beside a fetched index file this state's snapshot; False when there is none."""
    shipped = db_path.with_name(db_path.name + SHIPPED)
    try:
        if not db_path.resolve().is_relative_to((cache_root() / "published").resolve()):
            return False
        meta = json.loads((shipped / "snapshot.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or meta.get("base") is not None:
        return False
    meta["db_path"], meta["signature"] = str(db_path), asdict(signature)

    def write(into: Path) -> None:
        for path in shipped.rglob("*"):
            target = into / path.relative_to(shipped)
            if path.is_dir():
                target.mkdir(mode=0o700, exist_ok=True)
            elif path.name != "snapshot.json" and not path.name.endswith(
                (manifest.FETCHING, f"{manifest.FETCHING}.done")
            ):
                _link(path, target)  # not the rows a background fetch is still writing
        (into / "snapshot.json").write_text(json.dumps(meta), encoding="utf-8")

    adopted = publish(folder(key, signature, snapshot.FORMAT), write)
    note(
        f"the snapshot published with {db_path} was {'adopted' if adopted else 'not adopted: the cache is not writable'}"
    )
    return adopted


def _link(source: Path, target: Path) -> None:
    """A hard link (no bytes copied; the fetched version's folder may be removed later), else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
