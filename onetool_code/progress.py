"""What a long read tells whoever waits for it, and who decides where that goes.

The first read of an index is the one long wait of a search. The library never chooses a channel: a first read
tells the watcher of the current call (``watching``, a context variable, so each call and thread has its own) and
is silent when there is none, as in the OneTool pack or the library used directly (OneTool's stderr is its log).
The entry points own their channels: the command line watches with ``on_stderr``, the one place that tells a
terminal (a bar) from a pipe (one line when the read is a long one); the MCP server sends what it hears as
progress notifications to a client that asked for them. stdout is never touched (it may be OneTool's MCP channel
or a pipe the CLI writes results to). Bar redraws are throttled so a fast run on a slow terminal does not spend
its time drawing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol, TextIO

# What a read reports first, with the index's chunk count as its total: the size of the wait ahead.
CHUNKS = "chunks"
# A first read of this many chunks or more gets its line on a pipe: with vectors, about a second's read; smaller
# ones are over before a line would help. By count, not by time: the line comes before the wait, not during it.
NOTICE_CHUNKS = 5_000

_WIDTH = 30
_INTERVAL = 0.1


class Reading(Protocol):
    """Hears one read as it goes, (what is being read, done, total), then ``close`` when it is over."""

    def __call__(self, what: str, done: int, total: int) -> None: ...

    def close(self) -> None: ...


Watcher = Callable[[Path], Reading]  # a Reading for each first read of the index file it is given

_watcher: ContextVar[Watcher | None] = ContextVar("onetool_code_progress", default=None)


@contextmanager
def watching(watcher: Watcher) -> Iterator[None]:
    """First reads in this block (on this thread) are told to ``watcher``."""
    token = _watcher.set(watcher)
    try:
        yield
    finally:
        _watcher.reset(token)


def watcher() -> Watcher | None:
    """Whoever watches the current call; None: nobody, and a read is silent."""
    return _watcher.get()


def on_stderr(index: Path) -> Reading:
    """The command line's watcher: a bar for a person at a terminal; on a pipe, one line, so that a log or a
    script's user knows why a first read of a big index waits."""
    return Progress(True) if _terminal(sys.stderr) else _Notice(index, sys.stderr)


def _terminal(stream: TextIO) -> bool:
    return stream.isatty()


class _Notice:
    """One line on a pipe when a read begins that will take more than a moment, then nothing."""

    def __init__(self, index: Path, stream: TextIO) -> None:
        self.index = index
        self.stream = stream
        self.told = False

    def __call__(self, what: str, done: int, total: int) -> None:
        if what == CHUNKS and total >= NOTICE_CHUNKS and not self.told:  # told as the read goes on, too
            self.told = True
            self.stream.write(
                f"reading the index {self.index} for the first time ({total:,} chunks): this takes a moment, once\n"
            )
            self.stream.flush()

    def close(self) -> None:
        """The line stays: it is a record, not a bar."""


class Progress:
    """A one-line bar on stderr: phases of known size (``start``), advanced step by step; ``close`` clears the
    line. ``enabled`` None: only on a terminal."""

    def __init__(self, enabled: bool | None, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _terminal(self.stream) if enabled is None else enabled
        self.label = ""
        self.total = 0
        self.done = 0
        self._drawn_at = 0.0
        self._shown = False

    def __call__(self, what: str, done: int, total: int) -> None:
        """A ``Reading``: a new ``what`` starts a phase."""
        if what != self.label:
            self.start(what, total)
        self.advance(done - self.done)

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, total, 0
        self._draw(force=True)

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._draw(force=self.done >= self.total)

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False

    def _draw(self, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._drawn_at < _INTERVAL:
            return
        self._drawn_at = now
        share = self.done / self.total if self.total else 1.0
        filled = int(_WIDTH * min(share, 1.0))
        bar = "#" * filled + "-" * (_WIDTH - filled)
        self.stream.write(f"\r\033[K{self.label:<10} [{bar}] {self.done:,}/{self.total:,}")
        self.stream.flush()
        self._shown = True
