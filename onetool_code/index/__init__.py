"""One repository's index state behind one face: ``open(settings)`` gives the ``IndexState`` that engine and
report ask for a view to search and for status facts; nothing outside this package knows files, folders,
copies or segments, and nothing outside it imports its modules (``tests/test_layout.py``).

    database.py      ChunkHound's DuckDB file: open late and read-only, run schema's SQL, close; DuckDB errors
                     become ours
    store.py         the process store (an entry per state of the file), the cache directory, machine locks
    attributes.py    each chunk's filter attributes (language, kind, path) as arrays
    rows.py          the chunk rows a search shows, and regex over their code
    vector_cache.py  one model's normalised vectors, memory-mapped, ranked by a matrix product
    lexical.py       the BM25 index over a snapshot's chunks
    snapshot.py      one state of the file (rows, vectors, lexical index), read whole or as a delta, saved, mapped
    shapes.py        whether a snapshot's arrays agree in their rows, checked as it is loaded
    private_copy.py  a consistent copy of a file a writer holds
    shipped.py       a state exported whole for publishing, and a published one's snapshot adopted on arrival
    live.py          which snapshot answers, and when and from where a new state is read (background refresh)
    overlay.py       the checkout's changed, new and deleted files laid over that snapshot (the agent's edits)
    readers.py       the three rankings over a snapshot, or over the file itself with snapshots off
    views.py         what one search reads: a snapshot, or the file itself
    status.py        what ``status`` learns from the index

The indexer (our one writer, for tests and small projects) opens the file through ``connect``, ``layout`` and
``session``. The trap: process state lives here (the store, background refreshes); ``reset`` puts it back, for
tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from onetool_code import published
from onetool_code.errors import DamagedError, SupersededError
from onetool_code.index import live, overlay, shipped, status, store
from onetool_code.index.database import EmbeddingSet, Layout, connect, layout, session
from onetool_code.index.overlay import Facts as CheckoutFacts
from onetool_code.index.readers import Reader
from onetool_code.index.status import Facts, SnapshotInfo
from onetool_code.index.views import FileView, SnapshotView, View
from onetool_code.settings import Settings
from onetool_code.spans import note

# The rows a search rescores are still in a store that cannot be reached (a published index, fetched in part).
RowsUnreachable = published.RowsUnreachable

__all__ = [
    "CheckoutFacts",
    "EmbeddingSet",
    "Facts",
    "IndexState",
    "Layout",
    "Reader",
    "RowsUnreachable",
    "SnapshotInfo",
    "View",
    "connect",
    "export",
    "layout",
    "open",
    "refresh_in_background",
    "reset",
    "session",
]

T = TypeVar("T")


@dataclass(frozen=True)
class IndexState:
    """The index of one project, as its settings locate it."""

    settings: Settings

    def search(self, work: Callable[[View], T]) -> T:
        """``work`` done on the view a search reads: a snapshot (the file's current state, or the last one with a
        notice), or the file itself with snapshots off (the reason in the notice, when it is the cache)."""
        settings = self.settings
        uncached = store.cache_problem() if settings.cache else None
        if not settings.cache or uncached is not None:
            published.complete(settings.db_path)  # a published version's file, when it was left in the store
            return work(FileView.read(settings.project_root, settings.db_path, _joined(uncached, self._published())))
        try:
            return work(self._snapshot_view())
        except SupersededError:
            # Another process published the file's new state during this search (the embeddings request is the
            # long part) and removed this snapshot's folder before its lexical index was loaded: search the new one.
            note("the snapshot was superseded during the search: searched again in the new one")
            return work(self._snapshot_view())
        except DamagedError as exc:
            note(f"{exc}: searched again")
            live.forget(settings.db_path)
            return work(self._snapshot_view())

    def _snapshot_view(self) -> SnapshotView:
        settings = self.settings
        view = live.view(settings.project_root, settings.db_path)
        laid = overlay.laid(settings.project_root, settings.db_path, view.snapshot)
        return SnapshotView(laid.snapshot, _joined(view.notice, laid.notice, self._published()), laid)

    def _published(self) -> str | None:
        """Why a published index answers from a version that may not be the newest (its store unreachable)."""
        return published.notice(self.settings.db_path)

    def status(self) -> Facts:
        if not self.settings.cache or store.cache_problem() is not None:
            published.complete(self.settings.db_path)
        return status.gather(self.settings.project_root, self.settings.db_path, cache=self.settings.cache)

    def checkout(self) -> CheckoutFacts | None:
        """How the checkout differs from the index, and what answers for those files; None without a checkout
        (a published index fetched to this machine)."""
        settings = self.settings
        if settings.cache and store.cache_problem() is None:
            files = live.view(settings.project_root, settings.db_path).snapshot.files
            return overlay.facts(settings.project_root, settings.db_path, files, laid=True)
        view = FileView.read(settings.project_root, settings.db_path, None)
        with view.reader() as reader:
            files = reader.files()
        return overlay.facts(settings.project_root, settings.db_path, files, laid=False)


def _joined(*notices: str | None) -> str | None:
    return "; ".join(n for n in notices if n) or None


def export(settings: Settings, into: Path) -> dict[str, Any]:
    """The index's current state, whole, into ``into`` for publishing (``shipped.export``); the manifest's facts."""
    return shipped.export(settings.project_root, settings.db_path, into)


def open(settings: Settings) -> IndexState:
    """The index state of the project ``settings`` locate (nothing is read until it is asked)."""
    return IndexState(settings)


def refresh_in_background() -> None:
    """For long-lived hosts (the MCP server, the OneTool pack): a search that finds the index changed starts a
    refresh in a thread and waits for it at most ``live.FRESH_WAIT_SECONDS``."""
    live.refresh_in_background()
    published.refresh_in_background()


def reset() -> None:
    """This process's index state as at start (for tests): no snapshot held, refreshes inline."""
    store.STORE.clear()
    live.reset()
    overlay.reset()
    published.reset()
