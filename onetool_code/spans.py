"""LogSpan-style spans on structlog: one JSON record per call, through standard ``logging`` only.

We are a guest in OneTool's process, whose stdout is the MCP channel. So: never ``structlog.configure()``
(unconfigured structlog prints to stdout), never ``logging.basicConfig()``; one wrapped stdlib logger with a
``NullHandler``, and the host (OneTool's log file, or our CLI's ``--verbose``) decides where records go.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LOGGER_NAME = "onetool_code"
_stdlib_logger = logging.getLogger(LOGGER_NAME)
_stdlib_logger.addHandler(logging.NullHandler())


@functools.cache
def _logger() -> Any:
    """structlog, imported when a record is first written: importing it imports asyncio, 70 ms of the command
    line's start, and most command-line calls write no record (nothing listens below WARNING)."""
    import structlog

    return structlog.wrap_logger(
        _stdlib_logger,
        processors=[
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(sort_keys=False),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
    )


# OneTool's LogSpan cuts long values per field; so do we, so a huge query cannot bloat a log file.
_LIMITS = {"query": 100, "path": 200, "project": 200}
_DEFAULT_LIMIT = 120


def _cut(name: str, value: Any) -> Any:
    if isinstance(value, str):
        limit = _LIMITS.get(name, _DEFAULT_LIMIT)
        return value if len(value) <= limit else value[: limit - 3] + "..."
    return value


class Span:
    """The fields of one span; ``add`` more while the work runs."""

    def __init__(self, name: str, fields: dict[str, Any]) -> None:
        self.name = name
        self.fields = fields

    def add(self, **fields: Any) -> None:
        self.fields.update(fields)


_current: contextvars.ContextVar[Span | None] = contextvars.ContextVar("onetool_code_span", default=None)


def note(text: str) -> None:
    """Record something the caller need not see but a log reader should (a skipped file, a fallback) on the
    span of the call in progress; outside a call there is nobody to tell."""
    current = _current.get()
    if current is not None:
        current.fields.setdefault("notes", []).append(text)


@contextmanager
def span(name: str, **fields: Any) -> Iterator[Span]:
    """Write exactly one record when the block exits: SUCCESS, or FAILED with the error (which propagates).

    A record for an unexpected error (not one of ours) carries the traceback, so a bug behind the API's
    error boundary is still visible in the log.
    """
    current = Span(name, dict(fields))
    started = time.perf_counter()
    token = _current.set(current)
    try:
        yield current
    except BaseException as exc:
        from onetool_code.errors import OneToolCodeError

        current.add(status="FAILED", errorType=type(exc).__name__, errorMessage=str(exc))
        if not isinstance(exc, OneToolCodeError):
            current.add(traceback="".join(traceback.format_exception(exc))[-4000:])
        _emit(current, started, logging.ERROR if "traceback" in current.fields else logging.INFO)
        raise
    finally:
        _current.reset(token)
    current.fields.setdefault("status", "SUCCESS")
    _emit(current, started, logging.INFO)


def _emit(current: Span, started: float, level: int) -> None:
    if not _stdlib_logger.isEnabledFor(level):
        return
    duration = round(time.perf_counter() - started, 4)
    values = {k: (v if k in {"traceback", "errorMessage"} else _cut(k, v)) for k, v in current.fields.items()}
    _logger().log(level, current.name, span=current.name, duration=duration, **values)
