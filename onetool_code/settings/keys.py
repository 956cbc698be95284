"""API keys, read only when a request needs one, and the trust they follow.

The project's own files (``.chunkhound.json``, ``<project>/secrets.yaml``) come with a repository the user may not
have written, so a ``base_url`` that only they name gets only a key that they hold too: the user's key (an
argument, OneTool, the environment, the user's config) goes to the provider's own endpoint or to a server the user
named. Otherwise a cloned repository could collect keys with one line of JSON. The key never leaves here readable:
``Secret`` masks its repr.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onetool_code.errors import EmbeddingError, OneToolCodeError
from onetool_code.reading import SMALL_FILE, is_regular, read_regular
from onetool_code.settings.host import OneToolHost
from onetool_code.settings.project import PROJECT_CONFIG
from onetool_code.spans import note

if TYPE_CHECKING:
    from onetool_code.settings.resolve import Settings

SECRETS_ENV = "ONETOOL_CODE_SECRETS"
ONETOOL_SECRETS = "OneTool secrets"


class Secret(str):
    """A string whose repr never shows its value, so a key cannot leak through a log or a traceback."""

    def __repr__(self) -> str:
        return "Secret('***')"


@dataclass(frozen=True)
class KeyPlaces:
    """Where a key may be found, read only when an embeddings request needs one (``api_key``)."""

    project_root: Path
    project_key: Secret | None = field(repr=False)  # the project's .chunkhound.json embedding.api_key
    host: OneToolHost | None = field(repr=False)


def api_key(settings: Settings, url: str | None = None, url_source: str | None = None) -> tuple[Secret | None, str]:
    """The key of the call's provider for a request to ``url`` (default: the embeddings endpoint) and where it
    came from (the source is safe to show).

    Precedence, with the provider's key name (``OPENAI_API_KEY``, ``VOYAGE_API_KEY``): OneTool's
    ``get_secret(name)`` (inside OneTool), a ``secrets.yaml`` (the file named by ``ONETOOL_CODE_SECRETS``,
    then ``<project>/secrets.yaml``, then ``$XDG_CONFIG_HOME/onetool-code/secrets.yaml``), the project's
    ``.chunkhound.json`` ``embedding.api_key``, ``CHUNKHOUND_EMBEDDING__API_KEY``, then ``name`` in the
    environment. One provider's key never stands in for another's. When the URL comes only from the project's
    files, only the keys those files hold qualify (see the module docstring).
    """
    if url is None:
        url, url_source = settings.base_url, settings.base_url_source
    project_only = settings.untrusted(url, url_source)
    for value, source, from_project in _key_candidates(settings.keys, settings.key_name):
        # A YAML block scalar or a paste leaves a line break or a space at the end: not part of the key.
        key = str(value).strip() if value is not None else ""
        if key and (from_project or not project_only):
            if not _HEADER_SAFE.fullmatch(key):
                # The key goes in an Authorization header; an HTTP library that refuses it quotes the whole header
                # in its error. Name the key and its place, never its text.
                raise EmbeddingError(
                    f"the {settings.key_name} from {said_where(source)} holds a character that cannot be sent in a "
                    "request header (a space, a line break, a control or non-ASCII character): correct it there."
                )
            return Secret(key), source
    return None, "none"


# What an API key may hold: visible ASCII, as an HTTP header value carries it after "Bearer ".
_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def said_where(source: str) -> str:
    """Where a key came from, said for a person (``api_key``'s sources are file paths, or names)."""
    if source == PROJECT_CONFIG:
        return f"the project's {PROJECT_CONFIG}"
    if source == ONETOOL_SECRETS:
        return "OneTool's secrets"
    if source == "argument":
        return "the call's arguments"
    if source.startswith("tools.code."):
        return f"OneTool's {source}"
    if "/" not in source:
        return f"the environment variable {source}"
    return source


def _key_candidates(places: KeyPlaces, name: str) -> Iterator[tuple[object, str, bool]]:
    """(key, where, whether the project's own files hold it), in precedence order, read lazily."""
    if places.host is not None:
        yield places.host.get_secret(name), ONETOOL_SECRETS, False
    named = os.environ.get(SECRETS_ENV)
    named_file = Path(named).expanduser() if named else None
    if named_file is not None:
        yield _read_secrets(named_file, explicit=True).get(name), str(named_file), False
    user_file = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "onetool-code" / "secrets.yaml"
    project_file = _projects_own(places.project_root / "secrets.yaml", (named_file, user_file))
    if project_file is not None:
        yield _read_secrets(project_file, explicit=False).get(name), str(project_file), True
    if is_regular(user_file):
        yield _read_secrets(user_file, explicit=False).get(name), str(user_file), False
    yield places.project_key, PROJECT_CONFIG, True
    yield os.environ.get("CHUNKHOUND_EMBEDDING__API_KEY"), "CHUNKHOUND_EMBEDDING__API_KEY", False
    yield os.environ.get(name), name, False


def _projects_own(candidate: Path, users: Sequence[Path | None]) -> Path | None:
    """``candidate`` when it is the project's own file: a regular file in the project, not a link (git stores
    symlinks, so a repository can point its ``secrets.yaml`` at the user's), and not one of the user's own files
    under another name (a hard link)."""
    try:
        found = candidate.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode):
        return None
    for user in users:
        with contextlib.suppress(OSError):
            if user is not None and os.path.samestat(found, user.stat()):
                return None
    return candidate


def _read_secrets(secrets_file: Path, *, explicit: bool) -> Mapping[str, Any]:
    """A flat ``NAME: value`` mapping. A file named on purpose must be one; a ``secrets.yaml`` that merely sits
    in the project or config directory may be anything (a Kubernetes manifest, say) and is skipped, with a note."""
    # The parser's message can quote the file's lines, and so a key: name the file, not the content.
    import yaml  # only when a key is needed: 25 ms of every command's start otherwise

    problem = f"Cannot read {secrets_file}: not a flat YAML mapping of NAME: value"
    try:
        data = yaml.safe_load(read_regular(secrets_file, SMALL_FILE).decode("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as exc:
        if explicit:
            raise OneToolCodeError(problem) from exc
        data = []
    if data is None:
        return {}
    if not isinstance(data, dict):
        if explicit:
            raise OneToolCodeError(problem)
        note(f"skipped {secrets_file}: not a flat YAML mapping of NAME: value")
        return {}
    return data
