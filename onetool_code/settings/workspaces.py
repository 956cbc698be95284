"""Workspaces: several project roots under one name, from OneTool's config or a file the user names."""

from __future__ import annotations

from pathlib import Path

from onetool_code import published
from onetool_code.errors import BadInputError
from onetool_code.reading import SMALL_FILE, read_regular
from onetool_code.settings.host import OneToolHost

Workspaces = dict[str, list[str]]


def workspaces(host: OneToolHost | None) -> Workspaces:
    """The named workspaces of OneTool's config, ``tools.code.workspaces: {name: [project roots]}`` (the user's
    own file: trusted; relative roots resolve as any ``path``). None configured: none."""
    found = dict(host.tool_config).get("workspaces") if host else None
    return {} if found is None else _workspaces(found, "tools.code.workspaces", None)


def workspace_file(path: str) -> tuple[Workspaces, list[str] | None]:
    """The workspaces of a file the user points the CLI or the MCP server at (``--workspace FILE``): JSON or
    YAML, ``{name: [project roots]}``, or a list of roots (then the default when no path is given; a mapping's
    only workspace is the default too). Relative roots are relative to the file's folder. A file named on
    purpose must be one: anything else is an error naming it."""
    import yaml  # JSON is YAML; only this option pays for the import

    file = Path(path).expanduser().absolute()
    try:
        file = file.resolve()
        data = yaml.safe_load(read_regular(file, SMALL_FILE).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, RuntimeError) as exc:
        raise BadInputError(f"cannot read the workspace file {file}: {exc}") from exc
    if isinstance(data, list):
        return {}, _roots(data, str(file), file.parent)
    named = _workspaces(data, str(file), file.parent)
    return named, next(iter(named.values())) if len(named) == 1 else None


def _workspaces(data: object, where: str, base: Path | None) -> Workspaces:
    if not isinstance(data, dict) or not all(isinstance(name, str) and name for name in data):
        raise BadInputError(f"{where} must map workspace names to lists of project roots")
    return {name: _roots(roots, f"{where}: {name}", base) for name, roots in data.items()}


def _roots(data: object, where: str, base: Path | None) -> list[str]:
    if not isinstance(data, list) or not data or not all(isinstance(r, str) and r.strip() for r in data):
        raise BadInputError(f"{where} must be a non-empty list of project roots (texts)")
    if base is None:
        return list(data)
    return [root if published.is_url(root) else str(base / Path(root).expanduser()) for root in data]
