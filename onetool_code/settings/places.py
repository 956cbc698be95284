"""Where a call searches: the one owner of ``path``. Whatever the caller gave (nothing, a root, ``@name``, a list
mixing both) becomes project roots here, once, for every tool and every entry point, each root resolved into
the ``Settings`` of its own project (its index, its provider and model, its key zone, its ``.chunkhound.json``).

A workspace is named as ``path="@name"`` rather than by a parameter of its own: ``path`` is the one answer to
"where", so a call cannot name two that disagree, and ``["@api", "~/src/web"]`` mixes a workspace with a root.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from onetool_code import advice
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.settings.host import OneToolHost
from onetool_code.settings.project import project_root
from onetool_code.settings.resolve import Settings, resolve
from onetool_code.settings.workspaces import workspaces

MAX_REPOSITORIES = 20


@dataclass(frozen=True)
class Where:
    """Where a call searches and what it is told to search with: the caller's arguments, as given. The same value
    for every tool, so that a new kind of root is taught to ``locate`` once."""

    path: object = None
    db: str | None = None
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    cache: bool | None = None
    host: OneToolHost | None = None

    def settings(self, root: str | None) -> Settings:
        """The settings of one of the call's roots (None: the default project)."""
        return resolve(
            path=root, db=self.db, provider=self.provider, model=self.model, base_url=self.base_url,
            cache=self.cache, host=self.host,
        )  # fmt: skip


@dataclass(frozen=True)
class Member:
    """One repository of a workspace: its label and settings, or why it could not be resolved."""

    label: str
    settings: Settings | None
    problem: OneToolCodeError | None = None


@dataclass(frozen=True)
class Located:
    """A call's place: the settings of its project, or of a workspace's first repository that resolves (which give
    the defaults the user configured, limit and byte budget), and the workspace's repositories when it names
    several."""

    settings: Settings
    members: list[Member] | None = None


def locate(where: Where) -> Located:
    """The project, or the repositories, a call searches."""
    roots = place(where.path, workspaces(where.host))
    if not isinstance(roots, list):
        return Located(where.settings(roots))
    found = members(roots, where.settings)
    first = next((m.settings for m in found if m.settings is not None), None)
    if first is None:
        raise all_failed([(m.label, m.problem) for m in found if m.problem is not None])
    return Located(first, found)


def locate_one(where: Where, tool: str) -> Settings:
    """The one project of a tool that works on one project (``related``, ``usages``)."""
    return where.settings(one(where.path, workspaces(where.host), tool))


def named_paths(path: object, named: Mapping[str, list[str]]) -> object:
    """``path`` with each ``@name`` (alone, or an entry of a list) replaced by that workspace's roots; other
    values as given. ``./@name`` is a folder of that name."""

    def expand(value: object) -> list[object]:
        if not (isinstance(value, str) and value.startswith("@")):
            return [value]
        if value[1:] not in named:
            known = ", ".join(f"@{n}" for n in named) or "none (tools.code.workspaces, or --workspace FILE)"
            raise BadInputError(f"unknown workspace {value}; configured: {known}")
        return list(named[value[1:]])

    if isinstance(path, str):
        roots = expand(path)
        return roots[0] if len(roots) == 1 and roots[0] == path else roots
    if isinstance(path, (list, tuple)):
        return [root for value in path for root in expand(value)]
    return path


def place(path: object, named: Mapping[str, list[str]]) -> str | list[str] | None:
    """What a call's ``path`` names: one project root (None: the default one), or the roots of a workspace.

    Each ``@name`` is that workspace's roots here, at the entry, whatever their number: a one-root workspace is
    its root, never a folder called ``@name`` in the current directory. Roots that are the same folder
    (``api``, ``api/``, a symlink to it) are searched once, under the first one's name; a list left with one
    root is answered exactly as that root alone."""
    path = named_paths(path, named)
    if path is None or isinstance(path, str):
        return path
    if not isinstance(path, (list, tuple)) or not all(isinstance(p, str) and p.strip() for p in path):
        raise BadInputError("path must be a project root, or a list of project roots (non-empty texts)")
    if not 1 <= len(path) <= MAX_REPOSITORIES:
        raise BadInputError(f"path names {len(path)} projects; give 1 to {MAX_REPOSITORIES}")
    distinct: dict[str, str] = {}
    for root in path:
        distinct.setdefault(_folder(root), root)
    roots = list(distinct.values())
    return roots[0] if len(roots) == 1 else roots


def one(path: object, named: Mapping[str, list[str]], tool: str) -> str | None:
    """The one project root of a tool that works on one project (``related``, ``usages``, the indexer); a
    workspace of several is bad input naming its roots."""
    where = place(path, named)
    if isinstance(where, list):
        raise BadInputError(
            f"{tool} works on one project, and {advice.parameter('path')} names {len(where)}: give one of "
            f"{', '.join(where)}"
        )
    return where


def _folder(root: str) -> str:
    """The folder a root names, to tell two spellings of one apart; a root that names none keeps its text (its
    problem is reported when it is resolved)."""
    try:
        return str(project_root(root))
    except OneToolCodeError:
        return root


def members(paths: Sequence[str], settings_of: Callable[[str], Settings]) -> list[Member]:
    """Each root resolved on its own; a root that cannot be (gone, a broken ``.chunkhound.json``) is kept with its
    problem, to be named in a note."""
    found: list[tuple[str, Settings | None, OneToolCodeError | None]] = []
    for path in paths:
        try:
            resolved = settings_of(path)
        except OneToolCodeError as exc:
            found.append((Path(path.strip()).expanduser().name or path, None, exc))
            continue
        found.append((resolved.project_root.name, resolved, None))
    names = labels([name for name, _, _ in found])
    return [Member(name, resolved, problem) for name, (_, resolved, problem) in zip(names, found, strict=True)]


def labels(names: Sequence[str]) -> list[str]:
    """The folder names, made unique in order: a second ``api`` is ``api-2``."""
    taken: set[str] = set()
    unique = []
    for name in names:
        label, n = name or "project", 1
        while label in taken:
            n += 1
            label = f"{name}-{n}"
        taken.add(label)
        unique.append(label)
    return unique


def all_failed(failed: Sequence[tuple[str, OneToolCodeError]]) -> OneToolCodeError:
    """Every repository failed: that is the answer, each named with its whole message."""
    kinds = {type(exc) for _, exc in failed}
    kind = kinds.pop() if len(kinds) == 1 else OneToolCodeError
    said = " | ".join(f"{label}: {exc}" for label, exc in failed)
    return kind(f"no repository of the workspace could answer ({len(failed)}): {said}")
