"""What reaching a store needs from the user's side, gathered by ``settings`` (the one reader of the environment
and of the user's files) and handed in: nothing in this package reads either."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Environment:
    cache_root: Path  # the cache directory (``settings``' rule): versions are fetched under its ``published/``
    refresh: float  # seconds between two checks of a store for a new version
    s3_endpoint: str | None = None  # an S3-compatible endpoint, as the AWS tools take it (``AWS_ENDPOINT_URL``)
    s3_profile: Mapping[str, str] = field(default_factory=dict, repr=False)  # keys of the AWS tools' shared files
    secrets: tuple[str, ...] = field(default=(), repr=False)  # credential values no message may hold
