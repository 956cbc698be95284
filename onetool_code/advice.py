"""The next step a message names, written in the language of the surface that prints it.

A message that says what to do must name something that works where it is read: the library, the pack and the
MCP server take parameters (``mode="lexical"``), the command line takes flags (``--mode lexical``). Messages are
written once, deep in the package, with these functions; the command line says, for the time of its call, that
it is the one printing.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

_COMMAND_LINE: ContextVar[bool] = ContextVar("command_line", default=False)


@contextlib.contextmanager
def on_command_line() -> Iterator[None]:
    """Messages made inside speak flags."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def option(name: str, value: str | int) -> str:
    """An argument as the reader writes it: ``mode="lexical"``, or on the command line ``--mode lexical``."""
    if _COMMAND_LINE.get():
        return f"--{name.replace('_', '-')} {value}"
    return f"{name}={json.dumps(value)}"


def parameter(name: str) -> str:
    """A parameter named without a value: ``db``, or on the command line ``--db``."""
    return f"--{name.replace('_', '-')}" if _COMMAND_LINE.get() else name


def search_in_words() -> str:
    """A search by words, which needs no vectors and no key."""
    if _COMMAND_LINE.get():
        return 'search "..." --mode lexical'
    return 'search(query="...", mode="lexical")'


def index_command(root: Path, *, embeddings: bool = True) -> str:
    """Our indexer's command for ``root`` (a shell command on every surface); without embeddings it needs no key
    and is enough for words."""
    return f"python -m onetool_code index {shlex.quote(str(root))}" + ("" if embeddings else " --no-embeddings")
