"""Publishing one version: every object first, its manifest next, the newest-version manifest last; then old
versions pruned. A reader sees the version only once the last put is done, and never half of it."""

from __future__ import annotations

import hashlib
import secrets
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from onetool_code.errors import BadInputError
from onetool_code.published import manifest
from onetool_code.published.environment import Environment
from onetool_code.published.store import Location, Store

Told = Callable[[str], None]
UPLOADS = 4  # objects put at once


@dataclass(frozen=True)
class Published:
    manifest: manifest.Manifest
    pruned: tuple[str, ...]  # versions removed by ``keep``


def publish(
    url: str,
    folder: Path,
    facts: dict[str, Any],
    project: Path,
    keep: int | None,
    env: Environment,
    tell: Told = lambda _: None,
) -> Published:
    """Upload the files of ``folder`` (an index's export) as a new version of the index at ``url``."""
    if keep is not None and keep < 1:
        raise BadInputError(f"--keep must be at least 1 (the version just published), got {keep}")
    store = Store(Location.parse(url), env, create=True)
    now = time.time()
    version = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime(now))}{int(now % 1 * 1e6):06d}Z-{secrets.token_hex(4)}"
    base = f"{manifest.VERSIONS}{version}/"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    tell(f"uploading {len(files)} objects ({sum(p.stat().st_size for p in files) / 1e6:,.1f} MB) to {base}")

    def upload(path: Path) -> manifest.Item:
        key = base + path.relative_to(folder).as_posix()
        item = manifest.Item(key, path.stat().st_size, _sha256(path))
        store.put(key, path)
        return item

    with ThreadPoolExecutor(UPLOADS) as pool:  # the client releases the GIL: puts overlap
        items = list(pool.map(upload, files))
    made = manifest.Manifest(
        format=manifest.FORMAT,
        version=version,
        created=time.time(),
        project=_label(project.name),
        schema_version=facts.get("schema_version"),
        models=tuple(facts["models"]),
        files=int(facts["files"]),
        chunks=int(facts["chunks"]),
        git=git_state(project),
        items=tuple(items),
    )
    store.put(made.key(), made.dumps())
    store.put(manifest.LATEST, made.dumps())  # last: the version is visible from here on
    return Published(made, _prune(store, keep, version) if keep is not None else ())


def _prune(store: Store, keep: int, current: str) -> tuple[str, ...]:
    """Remove all but the newest ``keep`` versions (names sort by time; the one just published always stays)."""
    keys = store.list(manifest.VERSIONS)
    versions = sorted({k[len(manifest.VERSIONS) :].split("/", 1)[0] for k in keys})
    kept = set(versions[-keep:]) | {current}
    gone = [v for v in versions if v not in kept]
    for version in gone:
        folder = f"{manifest.VERSIONS}{version}/"
        ours = [k for k in keys if k.startswith(folder)]
        # The manifest first: a reader never finds a version whose objects are being removed.
        store.delete([k for k in ours if k.endswith(manifest.LATEST)])
        store.delete([k for k in ours if not k.endswith(manifest.LATEST)])
    return tuple(gone)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _label(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in name).lstrip(".-") or "project"
    return cleaned[:100]


def git_state(root: Path) -> dict[str, Any] | None:
    """The checkout's commit and whether its tree differs from it; None outside git (or without git)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}
