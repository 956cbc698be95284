"""``agents NAME [--write]``: the few lines that tell a coding agent when to use us, where that agent reads them.

Agents reach for grep unless told otherwise, and subagents see no MCP tools, only a shell: so the lines say when
to search (``parameters.WHEN``) and give the command line. ``--write`` puts them in the project as a section
between markers: added once, replaced in place on every later run, the rest of the file left as it was.

The trap: the project is untrusted. Its files may be symlinks to anything the user can write (``CLAUDE.md ->
~/.bashrc``), so no link is followed and only regular files are changed, by a new file renamed over the old one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from onetool_code import parameters
from onetool_code.errors import BadInputError, OneToolCodeError
from onetool_code.reading import read_regular

BEGIN = "<!-- onetool-code:begin (written by `onetool-code agents`; edits here are replaced) -->"
END = "<!-- onetool-code:end -->"
# An instruction file is read into every conversation, so a real one is kilobytes; a project's file past this is
# not one, and reading it whole (then rewriting it) would cost the memory and time of its size.
MAX_INSTRUCTIONS_BYTES = 4 << 20


@dataclass(frozen=True)
class Agent:
    """Where one agent reads project instructions: a file relative to the project root."""

    file: str
    why: str  # said when printing: why this file
    header: str = ""  # what the file must start with when we create it (Cursor's rule metadata)


# Claude Code: a CLAUDE.md section rather than a skill. A skill's body is read only when Claude judges a task to
# match its description, and the point here is to change a default it does not question (grep first); CLAUDE.md is
# in every conversation, subagents' included, and these lines are few.
_CLAUDE = Agent("CLAUDE.md", "Claude Code reads CLAUDE.md in every conversation, subagents too (a skill only when it "
                "judges a task to match)")  # fmt: skip
_AGENTS_MD = Agent("AGENTS.md", "{name} reads AGENTS.md at the start of every session")
AGENTS = {
    "claude": _CLAUDE,
    "codex": _AGENTS_MD,
    "opencode": _AGENTS_MD,
    "amp": _AGENTS_MD,
    "cursor": Agent(
        ".cursor/rules/onetool-code.mdc",
        "Cursor applies a rule with alwaysApply to every request",
        "---\ndescription: When to search code with onetool-code\nalwaysApply: true\n---\n",
    ),
    "gemini": Agent("GEMINI.md", "Gemini CLI reads GEMINI.md at the start of every session"),
}


def command() -> str:
    """How a shell reaches us: the installed script when it is on PATH, else this Python with ``-m``."""
    return "onetool-code" if shutil.which("onetool-code") else f"{shlex.quote(sys.executable)} -m onetool_code"


def section() -> str:
    """The instructions, between the markers."""
    run = command()
    return "\n".join(
        (
            BEGIN,
            "## Code search: onetool-code",
            "",
            parameters.WHEN,
            "",
            "- MCP tools, when connected: `search`, `related` (file, line), `usages` (name), `search_batch`, `status`.",
            "- From a shell (subagents):",
            f'  `{run} search "where are tokens refreshed" --limit 5 --exclude test`,',
            f"  `{run} search --like src/auth/tokens.py:42` (code like that place),",
            f"  `{run} usages QuerySet.bulk_create` (where a name is used).",
            END,
            "",
        )
    )


def instructions(name: str) -> str:
    """What ``agents NAME`` prints: where the lines go and why, then the lines."""
    agent = _agent(name)
    why = agent.why.format(name=name.capitalize())
    return f"# For {agent.file} ({why}); `--write` adds it there.\n\n{agent.header}{section()}"


def write(name: str, path: str | None) -> str:
    """Add or update the section in the agent's file under the project root; say what was done."""
    from onetool_code import settings

    agent = _agent(name)
    root = settings.project_root(path)
    target = _safe_target(root, agent.file)
    old = _read(target, name)
    if old is None:
        text, did = agent.header + section(), "created"
    elif BEGIN in old or END in old:
        before, after = _around_section(old, target)
        text, did = before + section() + after.removeprefix("\n"), "updated"
    else:
        text, did = old + ("" if not old or old.endswith("\n") else "\n") + "\n" + section(), "added to"
    if text == old:
        return f"{target}: already up to date"
    _replace(target, text)
    return f"{target}: {did}"


def _agent(name: str) -> Agent:
    agent = AGENTS.get(name.strip().lower())
    if agent is None:
        raise BadInputError(f"unknown agent {name!r}; known: {', '.join(AGENTS)}")
    return agent


def _around_section(text: str, target: Path) -> tuple[str, str]:
    """The text before our section and after it. A file with one marker but not the other, or one twice, was
    edited by hand: guessing which part is ours could delete the user's text, so that is an error."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise BadInputError(
            f"{target} holds the onetool-code markers out of order or more than once: fix them by hand "
            "(or remove the section) and run again"
        )
    before, _, rest = text.partition(BEGIN)
    return before, rest.partition(END)[2]


def _safe_target(root: Path, relative: str) -> Path:
    """The file under ``root``, its folders made as needed; an error when any part of the way is a symlink or
    not a folder, or the file itself is a symlink or not a regular file."""
    here = root
    parts = PurePosixPath(relative).parts
    for part in parts[:-1]:
        here = here / part
        with contextlib.suppress(FileExistsError):
            here.mkdir(mode=0o755)
        if here.is_symlink() or not here.is_dir():
            raise BadInputError(
                f"{here} is a symlink or not a folder: nothing written (it may lead out of the project)"
            )
    target = here / parts[-1]
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise BadInputError(f"{target} is a symlink or not a regular file: nothing written")
    return target


def _read(target: Path, name: str) -> str | None:
    """The file's text, or None when there is none; read without following a link put there meanwhile. A file
    over ``MAX_INSTRUCTIONS_BYTES`` is refused before a byte of it is read: the project can put anything there."""
    try:
        data = read_regular(target, MAX_INSTRUCTIONS_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            raise BadInputError(
                f"{target} is {exc.strerror}, too large for instructions an agent reads every session: nothing "
                f"written (trim it, or paste in the lines `agents {name}` prints)"
            ) from exc
        raise OneToolCodeError(f"cannot read {target}: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{target} is not UTF-8 text: nothing written") from exc


def _replace(target: Path, text: str) -> None:
    """Write a new file beside the target and rename it over it: a reader sees the old file or the new one,
    never half of one; the old file's permissions are kept."""
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o644
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        temporary.chmod(mode)
        temporary.replace(target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
