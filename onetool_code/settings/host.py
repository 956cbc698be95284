"""What the machine and the host around a call give it: OneTool's secrets and ``tools.code`` settings, and the
cache folder our derived state lives in."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onetool_code import parameters
from onetool_code.errors import OneToolCodeError

CACHE_ENV = "ONETOOL_CODE_CACHE_DIR"


@dataclass(frozen=True)
class OneToolHost:
    """What OneTool hands a pack: its secret lookup and the ``tools: {code: ...}`` settings."""

    get_secret: Callable[[str], str | None]
    tool_config: Mapping[str, Any] = field(default_factory=dict)


def onetool_host() -> OneToolHost | None:
    """OneTool's secret lookup and ``tools: {code: ...}`` settings inside its server; None anywhere else.

    ``import ot`` succeeds wherever onetool-mcp is installed, so presence is not enough: ``get_config()``
    raises RuntimeError ("No config loaded") outside a running OneTool (measured on 2.2.2).
    """
    try:
        from ot.config import get_config, get_secret, get_tool_config
    except ImportError:
        return None
    try:
        get_config()
    except RuntimeError:
        return None
    # Without a schema OneTool returns the raw mapping, so a bad value reaches our validation (with a
    # pydantic schema it would silently fall back to defaults).
    config = get_tool_config("code")
    return OneToolHost(get_secret=get_secret, tool_config=dict(config) if isinstance(config, Mapping) else {})


def tool_bool(tool: Mapping[str, Any], parameter: parameters.Parameter) -> bool:
    value = tool.get(parameter.name, parameter.default)
    if not isinstance(value, bool):
        raise OneToolCodeError(f"OneTool setting tools.code.{parameter.name} must be true or false, got {value!r}")
    return value


def tool_int(tool: Mapping[str, Any], parameter: parameters.Parameter) -> int:
    """A whole number from OneTool's ``tools.code`` within the parameter's range, else its default."""
    name, low, high = parameter.name, parameter.low, parameter.high
    value = tool.get(name)
    if value is None:
        return parameter.default
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be a whole number, got {value!r}") from exc
    if not low <= number <= high:
        raise OneToolCodeError(f"OneTool setting tools.code.{name} must be between {low} and {high}, got {number}")
    return number


def cache_root() -> Path:
    """``$ONETOOL_CODE_CACHE_DIR``, else ``$XDG_CACHE_HOME/onetool-code``, else ``~/.cache/onetool-code``;
    never inside the project."""
    named = os.environ.get(CACHE_ENV)
    if named:
        return Path(named).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "onetool-code"
