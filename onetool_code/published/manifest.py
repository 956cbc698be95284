"""What one published version is: its manifest, written last, so a version without one does not exist.

The store's layout under the URL's prefix:

    versions/<version>/chunks.db            ChunkHound's file as it was read (its WAL beside it, when it had one)
    versions/<version>/chunks.db.snapshot-N our snapshot of that state (format N): a reader searches it at once
                                            (its float32 rows, ``matrix.npy``, have block digests beside them:
                                            ``matrix.npy.blocks``, read before the rows are here)
    versions/<version>/manifest.json        the version's manifest
    manifest.json                           the newest version's manifest: the one object a reader polls

Everything read from a store is untrusted: a manifest is bounded, parsed strictly, refused when its format is
newer than this reader's, and each object it names must be under its own version's folder, with a plain name.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from onetool_code.errors import OneToolCodeError

FORMAT = 1  # bump when a reader of the previous format could not use a version
LATEST = "manifest.json"
SHIPPED = ".snapshot-"  # a snapshot shipped beside the index file: the file's name, this, and its format
FETCHING = ".fetching"  # beside an object being fetched into the cache: never taken for the whole object
BLOCKS = ".blocks"  # beside a shipped snapshot's float32 rows: the sha256 of each block (``rows.py``)
VERSIONS = "versions/"
MAX_BYTES = 4 << 20  # a manifest of this size names some 30,000 objects
MAX_OBJECTS = 20_000
# Version names sort by time, to the microsecond: ``20261126T213000123456Z-3f9a1c0b``.
VERSION = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6,32}$")
_PIECE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class ManifestError(OneToolCodeError):
    """A manifest this reader must not use; the message says why and what to do."""


@dataclass(frozen=True)
class Item:
    """One object of a version: its key under the prefix, size and sha256."""

    key: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    format: int
    version: str
    created: float  # seconds since the epoch, when it was published
    project: str  # the project's folder name where it was published: the label it is searched under
    schema_version: int | None  # ChunkHound's schema_version row
    models: tuple[dict[str, Any], ...]  # each vector set: provider, model, dims, count
    files: int
    chunks: int
    git: dict[str, Any] | None  # commit and whether the tree was dirty, when the project is a git checkout
    items: tuple[Item, ...]

    def folder(self) -> str:
        return f"{VERSIONS}{self.version}/"

    def key(self) -> str:
        return f"{self.folder()}{LATEST}"

    def dumps(self) -> bytes:
        data = asdict(self)
        data["items"] = [asdict(i) for i in self.items]
        return json.dumps(data, indent=1).encode()

    @property
    def size(self) -> int:
        return sum(i.size for i in self.items)


def loads(data: bytes, where: str) -> Manifest:
    """A manifest from the store, checked before anything it names is fetched."""
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ManifestError(f"the manifest at {where} is not JSON ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("format"), int):
        raise ManifestError(f"the manifest at {where} has no format number")
    if raw["format"] > FORMAT:
        raise ManifestError(
            f"the index at {where} was published in manifest format {raw['format']}, newer than this onetool-code "
            f"reads ({FORMAT}): upgrade onetool-code to search it"
        )
    try:
        manifest = _parsed(raw)
    except (KeyError, TypeError, ValueError) as exc:
        raise ManifestError(f"the manifest at {where} is malformed ({exc})") from None
    _check(manifest, where)
    return manifest


def _parsed(raw: dict[str, Any]) -> Manifest:
    items = raw["items"]
    if not isinstance(items, list) or len(items) > MAX_OBJECTS:
        raise ValueError(f"items must be a list of at most {MAX_OBJECTS}")
    git = raw.get("git")
    return Manifest(
        format=int(raw["format"]),
        version=str(raw["version"]),
        created=float(raw["created"]),
        project=str(raw["project"]),
        schema_version=None if raw.get("schema_version") is None else int(raw["schema_version"]),
        models=tuple(dict(m) for m in raw["models"]),
        files=int(raw["files"]),
        chunks=int(raw["chunks"]),
        git=dict(git) if isinstance(git, dict) else None,
        items=tuple(Item(str(i["key"]), int(i["size"]), str(i["sha256"])) for i in items),
    )


def _check(manifest: Manifest, where: str) -> None:
    """Names that cannot leave the version's folder, or the cache folder a reader writes them into."""
    if not VERSION.match(manifest.version):
        raise ManifestError(f"the manifest at {where} names a version {manifest.version[:80]!r} of no known form")
    if not _PIECE.match(manifest.project):
        raise ManifestError(f"the manifest at {where} names a project {manifest.project[:80]!r} of no known form")
    folder = manifest.folder()
    for item in manifest.items:
        relative = item.key.removeprefix(folder)
        pieces = relative.split("/")
        if (
            not item.key.startswith(folder)
            or not all(_PIECE.match(p) and p not in (".", "..") for p in pieces)
            or relative == LATEST
        ):
            raise ManifestError(
                f"the manifest at {where} names an object outside its version's folder ({item.key[:200]!r}): "
                "refused, nothing was fetched"
            )
        if item.size < 0 or not _SHA256.match(item.sha256):
            raise ManifestError(f"the manifest at {where} gives {item.key} no valid size and sha256")
