"""Processes a test started, or that something it started left behind: whether one is still running, and stopping
them for good."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path


def alive(pid: int) -> bool:
    """Running: it exists and is not a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop(pids: Iterable[int], grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL for those still running after ``grace`` seconds."""
    pids = set(pids)
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.2)
    _signal({pid for pid in pids if alive(pid)}, signal.SIGKILL)


def _signal(pids: set[int], sent: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sent)
