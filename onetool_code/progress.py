"""A one-line progress bar on stderr, for people at a terminal; silent otherwise.

stdout is never touched (it may be OneTool's MCP channel or a pipe the CLI writes results to). Redraws are
throttled so a fast run on a slow terminal does not spend its time drawing.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 30
_INTERVAL = 0.1


class Progress:
    """Phases of known size (``start``), advanced step by step; ``close`` clears the line."""

    def __init__(self, enabled: bool | None, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label = ""
        self.total = 0
        self.done = 0
        self._drawn_at = 0.0
        self._shown = False

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
