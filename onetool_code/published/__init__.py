"""Indexes published once to object storage and searched from any machine.

A publisher (a CI job, after ``chunkhound index``) uploads one immutable version of a project's index
(``upload.py``); a reader names the store URL where a project root is accepted, and ``place`` turns it into the
project folder of the newest version on this machine (``replica.py``), which is then searched exactly as a
local index is. ``store.py`` is the one place that talks to a store; ``manifest.py`` says what a version is and
what a reader accepts. The store client is imported only when a URL is used.
"""

from __future__ import annotations

from onetool_code.published.environment import Environment
from onetool_code.published.replica import (
    Fetched,
    complete,
    database,
    fetched,
    notice,
    place,
    refresh_in_background,
    reset,
)
from onetool_code.published.store import RowsUnreachable, is_url
from onetool_code.published.upload import Published, publish

__all__ = [
    "Environment",
    "Fetched",
    "Published",
    "RowsUnreachable",
    "complete",
    "database",
    "fetched",
    "is_url",
    "notice",
    "place",
    "publish",
    "refresh_in_background",
    "reset",
]
